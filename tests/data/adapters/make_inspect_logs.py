import sys

from inspect_ai import Task, eval, eval_set, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput
from inspect_ai.scorer import match
from inspect_ai.solver import solver

# which (model, sample) answers are right, per epoch: C = right, I = wrong
PATTERN = {
    "model-a": {"c1": "CI", "c2": "II", "c3": "CC"},
    "model-b": {"c1": "CC", "c2": "IC", "c3": "II"},
}


@solver
def scripted(run: int = 0):
    async def solve(state, generate):
        m = str(state.model).split("/")[-1]
        right = PATTERN[m][str(state.sample_id)][(state.epoch - 1 + run) % 2] == "C"
        text = state.target.text if right else "I do not know"
        state.output = ModelOutput.from_content(str(state.model), text)
        state.messages.append(state.output.message)
        return state

    return solve


@task
def capitals(run: int = 0):
    return Task(
        dataset=[
            Sample(input="Capital of France?", target="Paris", id="c1"),
            Sample(input="Capital of Peru?", target="Lima", id="c2"),
            Sample(input="Capital of Chad?", target="N'Djamena", id="c3"),
        ],
        solver=scripted(run),
        scorer=match(),
    )


if sys.argv[1] == "set":
    ok, logs = eval_set(
        capitals(),
        log_dir="evalset",
        model=["mockllm/model-a", "mockllm/model-b"],
        epochs=2,
        display="none",
    )
    print(ok)
else:
    for run in (0, 1):  # the same task and model in two separate runs, one epoch each
        eval(
            capitals(run=run),
            model="mockllm/model-a",
            epochs=1,
            log_dir="runs",
            display="none",
        )

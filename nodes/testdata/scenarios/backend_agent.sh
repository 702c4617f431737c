#!/bin/sh
# A stand-in for a CLI coding agent: it reads its task (the path of _task.md is its argument),
# writes backend.py in its working directory (the node's scratch folder) and reports in
# _result.md.
set -e
task="$1"
grep -q "backend" "$task" || { echo "the task does not ask for a backend" >&2; exit 3; }
cat > backend.py <<'PY'
from fastapi import FastAPI

app = FastAPI()
todos = []


@app.get("/todos")
def list_todos():
    return todos


@app.post("/todos")
def add_todo(todo: dict):
    todos.append(todo)
    return todo
PY
echo "wrote backend.py"
printf 'backend.py: a FastAPI app serving GET and POST /todos\n' > _result.tmp
mv _result.tmp _result.md

"""Index the Python source under a directory: each function and class, file:line.

Read only: it prints the index as JSON and writes nothing.
"""

import ast
import json
import os
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "."
index = []
for dirpath, dirnames, filenames in os.walk(root):
    dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
    for name in sorted(filenames):
        if not name.endswith(".py"):
            continue
        path = os.path.join(dirpath, name)
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                index.append(
                    {"name": node.name, "file": os.path.relpath(path, root), "line": node.lineno}
                )
print(json.dumps(sorted(index, key=lambda e: (e["file"], e["line"]))))

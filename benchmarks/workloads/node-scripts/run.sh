# inputs: A B C D
# A node script. A: a module of the project required, a sum. B: zlib, a new output folder,
# a child process (wc). C: a worker thread. D: crypto, another new folder, another child (sort).
exec node tool.js "$1"

from cvg_observe.cli import run

run()

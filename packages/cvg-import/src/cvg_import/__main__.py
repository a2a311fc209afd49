from cvg_import.cli import run

run()

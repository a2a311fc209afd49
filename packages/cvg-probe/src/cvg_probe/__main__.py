from cvg_probe.cli import run

run()

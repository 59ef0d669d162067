from hookd.cli import main

main(prog_name="hookd")  # `python -m hookd` is `hookd`: its usage lines, its completion (_HOOKD_COMPLETE)

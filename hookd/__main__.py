from hookd.cli import main

main()

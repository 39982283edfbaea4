from vaultlens.cli.main import main

main()

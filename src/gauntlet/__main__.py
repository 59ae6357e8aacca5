"""`python -m gauntlet` runs the command line."""

from gauntlet.cli import main

main()

"""The `zaya` command line; see `zaya_cli.app`."""

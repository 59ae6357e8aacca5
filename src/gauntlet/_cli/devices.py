"""`gauntlet devices`: what can run here."""

from __future__ import annotations

import typer
from rich.table import Table

from gauntlet import devices
from gauntlet._cli.output import out


def register(app: typer.Typer) -> None:
    """Add the `devices` command."""
    app.command("devices")(list_devices)


def list_devices() -> None:
    """List the CPU, GPUs and accelerator simulators available here."""
    table = Table(title="devices")
    for column in ("device", "kind", "description", "details"):
        table.add_column(column, overflow="fold")
    for device in devices.list_devices():
        details = ", ".join(f"{k}={v}" for k, v in device.details.items())
        table.add_row(device.name, device.kind, device.description, details)
    out.print(table)

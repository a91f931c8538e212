"""fail() and @reports: one clean line, brackets kept, exit code 2; other exceptions keep their traceback."""

import pytest
import typer
from typer.testing import CliRunner
from zaya_config.cli_errors import fail, reports
from zaya_config.errors import ZayaConfigError

app = typer.Typer()


@app.command()
def check(kind: str) -> None:
    run(kind)


@reports(ZayaConfigError)
def run(kind: str) -> None:
    if kind == "config":
        raise ZayaConfigError("timing key CL is missing from [timing]; DDR4 needs it")
    if kind == "bug":
        raise KeyError("not a user error")
    fail("plain [text] message")


def _run(kind):
    return CliRunner().invoke(app, [kind])


def test_reported_error_is_one_line_with_its_brackets_and_exit_2():
    result = _run("config")
    assert result.exit_code == 2
    assert result.output.strip() == "error: timing key CL is missing from [timing]; DDR4 needs it"
    assert "Traceback" not in result.output


def test_fail_with_a_string():
    result = _run("other")
    assert result.exit_code == 2 and result.output.strip() == "error: plain [text] message"


def test_unreported_errors_keep_their_traceback():
    result = _run("bug")
    assert result.exit_code == 1 and isinstance(result.exception, KeyError)


def test_reports_keeps_the_wrapped_functions_name_and_doc():
    @reports(ValueError)
    def command() -> None:
        """Doc."""

    assert command.__name__ == "command" and command.__doc__ == "Doc."
    with pytest.raises(typer.Exit):
        reports(ValueError)(lambda: (_ for _ in ()).throw(ValueError("x")))()

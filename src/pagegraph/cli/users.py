"""`pagegraph users`: the LangGraph server's users file (names, roles, projects, ceilings, hashed API keys)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from pagegraph.access.keys import convert_plain_file, hash_key, new_key, read_users, write_users
from pagegraph.access.records import ROLES, ApiUser
from pagegraph.cli.common import app, console, fail
from pagegraph.config import get_settings
from pagegraph.errors import PagegraphError
from pagegraph.state.documents import CONFIDENTIALITY_LEVELS

users_app = typer.Typer(
    no_args_is_help=True,
    help="Manage the server's users file ($PAGEGRAPH_AUTH_FILE): who may ask, ingest, and read what.",
)
app.add_typer(users_app, name="users")

FileOption = Annotated[
    Optional[Path], typer.Option("--file", help="users file (default: $PAGEGRAPH_AUTH_FILE)", show_default=False)
]


def users_file(file: Path | None) -> Path:
    path = file or get_settings().server.auth_file
    if path is None:
        raise PagegraphError("no users file: pass --file PATH or set PAGEGRAPH_AUTH_FILE")
    return path.expanduser().resolve()


def existing_users(path: Path) -> list[ApiUser]:
    return read_users(path) if path.exists() else []


@users_app.command("add")
def add(
    name: Annotated[str, typer.Argument(help="user name (shown as the owner of their threads)")],
    projects: Annotated[
        Optional[list[str]], typer.Option("--projects", help="a project they may read; repeatable (default: every)")
    ] = None,
    ceiling: Annotated[str, typer.Option(help="highest confidentiality they may read")] = "internal",
    role: Annotated[str, typer.Option(help="reader: ask; editor: also ingest; admin: everything")] = "reader",
    file: FileOption = None,
) -> None:
    """Add a user with a new API key, printed once: only its salted hash is stored."""
    try:
        path = users_file(file)
        if role not in ROLES:
            raise PagegraphError(f"--role {role!r}: choose {', '.join(ROLES)}")
        if ceiling not in CONFIDENTIALITY_LEVELS:
            raise PagegraphError(f"--ceiling {ceiling!r}: choose {', '.join(CONFIDENTIALITY_LEVELS)}")
        users = existing_users(path)
        if any(user.name == name for user in users):
            raise PagegraphError(f"{path}: user {name!r} exists (remove them first to issue a new key)")
        key, key_id = new_key()
        user = ApiUser(name=name, key_id=key_id, key_hash=hash_key(key), role=role, projects=projects, ceiling=ceiling)
        write_users(path, [*users, user])
    except PagegraphError as exc:
        raise fail(str(exc)) from None
    console.print(f"added {name} ({role}) to {path}. Their API key, shown only now:", highlight=False)
    print(key)


@users_app.command("remove")
def remove(name: Annotated[str, typer.Argument(help="user to remove")], file: FileOption = None) -> None:
    """Remove a user; their key stops working at once."""
    try:
        path = users_file(file)
        users = existing_users(path)
        if not any(user.name == name for user in users):
            raise PagegraphError(f"{path}: no user {name!r}")
        write_users(path, [user for user in users if user.name != name])
    except PagegraphError as exc:
        raise fail(str(exc)) from None
    console.print(f"removed {name} from {path}", highlight=False)


@users_app.command("list")
def list_users(file: FileOption = None) -> None:
    """List the users with their role, projects and ceiling (keys are never shown: only hashes are kept)."""
    try:
        path = users_file(file)
        users = existing_users(path)
    except PagegraphError as exc:
        raise fail(str(exc)) from None
    table = Table("name", "role", "projects", "ceiling", title=str(path))
    for user in users:
        projects = "every project" if user.role == "admin" or user.projects is None else ", ".join(user.projects)
        table.add_row(user.name, user.role, projects, "any" if user.role == "admin" else user.ceiling)
    console.print(table)


@users_app.command("convert")
def convert(file: Annotated[Path, typer.Argument(help="a users file that holds plain-text api_key fields")]) -> None:
    """Replace plain-text API keys by their salted hashes, in place; the keys stay valid. Users without a role
    become readers: give editors `"role": "editor"` in the file."""
    try:
        converted = convert_plain_file(file.expanduser().resolve())
    except PagegraphError as exc:
        raise fail(str(exc)) from None
    if converted:
        console.print(f"{file}: hashed the keys of {', '.join(converted)}", highlight=False)
    else:
        console.print(f"{file}: no plain-text keys left", highlight=False)

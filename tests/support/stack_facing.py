"""Which tests face TensorBoard: the ones tests/run_all.sh runs again on the older stack.

The older-stack pass (TensorBoard 2.20 on protobuf 4.25) exists for what differs between TensorBoard
versions. The product touches TensorBoard only at its edge: the plugin API, the HTTP helpers and the
error classes of the routes, the CLI and capture (`profscope.plugin`, `params`, `cli`, `capture`,
the tools' `routes`); it never imports protobuf. A test faces TensorBoard when it uses a fixture that
serves the plugin (`FACING_FIXTURES`), or its module uses something defined in TensorBoard or werkzeug,
or in a profscope module that itself uses TensorBoard. The other tests run the same product code on
the same libraries in both passes, so they run once.
"""

from __future__ import annotations

import types
from collections.abc import Iterable

# Fixtures that serve the plugin: through TensorBoard's own server, its WSGI app or the CLI's.
FACING_FIXTURES = frozenset({"plugin_client", "tensorboard_server", "browser_page", "tab"})
STACK_PACKAGES = ("tensorboard", "werkzeug")


def _module_name(value: object) -> str:
    if isinstance(value, types.ModuleType):
        return value.__name__
    name = getattr(value, "__module__", None)
    return name if isinstance(name, str) else ""


def _uses_stack(module: types.ModuleType) -> bool:
    """The module holds something defined in TensorBoard or werkzeug."""
    return any(_module_name(v).startswith(STACK_PACKAGES) for v in vars(module).values())


def module_faces_tensorboard(module: types.ModuleType, loaded: dict[str, types.ModuleType]) -> bool:
    """`module` uses TensorBoard or werkzeug, directly or through a profscope module that does."""
    for value in vars(module).values():
        name = _module_name(value)
        if name.startswith(STACK_PACKAGES):
            return True
        used = loaded.get(name) if name.startswith("profscope") else None
        if used is not None and _uses_stack(used):
            return True
    return False


def faces_tensorboard(
    fixturenames: Iterable[str], module: types.ModuleType, loaded: dict[str, types.ModuleType]
) -> bool:
    return bool(FACING_FIXTURES.intersection(fixturenames)) or module_faces_tensorboard(module, loaded)

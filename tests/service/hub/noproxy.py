"""A JupyterHub proxy that proxies nothing: the tests talk to the hub's own port (no node, no CHP)."""

from __future__ import annotations

from typing import Any, ClassVar

from jupyterhub.proxy import Proxy


class NoProxy(Proxy):  # type: ignore[misc]
    should_start = False
    routes: ClassVar[dict[str, Any]] = {}

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    async def add_route(self, routespec: str, target: str, data: dict[str, Any]) -> None:
        self.routes[routespec] = {"routespec": routespec, "target": target, "data": data}

    async def delete_route(self, routespec: str) -> None:
        self.routes.pop(routespec, None)

    async def get_all_routes(self) -> dict[str, Any]:
        return dict(self.routes)

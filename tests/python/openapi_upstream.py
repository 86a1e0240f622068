"""A small FastAPI service for the OpenAPI import round trip (test_openapi_import.py).

Run with uvicorn on 127.0.0.1. It publishes its own OpenAPI 3.1 document at /openapi.json and
records every request it receives (method, path, query, selected headers, body), readable at
/_seen and cleared by DELETE /_seen, so a test can compare what the imported tools sent with
what a direct call sends. Does socket I/O only through uvicorn; state is in memory.
"""

from __future__ import annotations

from fastapi import Cookie, Depends, FastAPI, Form, Header, HTTPException, Query, Request, Response, UploadFile
from fastapi.responses import JSONResponse
from fastapi.security import APIKeyHeader
from pydantic import BaseModel

API_KEY = "imp0rt-K3Y-5e2b9"
RECORDED_HEADERS = ("content-type", "x-request-id", "x-api-key", "cookie")

app = FastAPI(title="Items API", version="1.2.0", description="Items for the import round trip.")
seen: list[dict] = []


@app.middleware("http")
async def record(request: Request, call_next):
    if not request.url.path.startswith("/_seen") and request.url.path != "/openapi.json":
        body = await request.body()
        seen.append(
            {
                "method": request.method,
                "path": request.url.path,
                "raw_path": request.scope.get("raw_path", b"").decode("latin-1"),
                "query": sorted(request.query_params.multi_items()),
                "headers": {h: request.headers.get(h) for h in RECORDED_HEADERS if h in request.headers},
                "body": body.decode("utf-8", "replace"),
            }
        )
    return await call_next(request)


@app.get("/_seen", include_in_schema=False)
def get_seen() -> list[dict]:
    return seen


@app.delete("/_seen", include_in_schema=False)
def clear_seen() -> Response:
    seen.clear()
    return Response(status_code=204)


class ItemIn(BaseModel):
    name: str
    price: float
    tags: list[str] = []
    note: str | None = None


class Item(ItemIn):
    id: int


ITEMS: dict[int, Item] = {1: Item(id=1, name="hammer", price=9.5, tags=["tools"])}


@app.get("/items", operation_id="list_items", summary="List items")
def list_items(q: str | None = None, limit: int = 10, tags: list[str] = Query(default=[])) -> list[Item]:
    """Items whose name contains `q`, having every tag in `tags`."""
    found = [i for i in ITEMS.values() if (q is None or q in i.name) and set(tags) <= set(i.tags)]
    return found[:limit]


@app.get("/items/{item_id}", operation_id="get_item", summary="Get one item")
def get_item(item_id: int, x_request_id: str | None = Header(default=None)) -> Item:
    if item_id not in ITEMS:
        raise HTTPException(status_code=404, detail=f"Item {item_id} not found")
    return ITEMS[item_id]


@app.post("/items", operation_id="create_item", status_code=201)
def create_item(item: ItemIn, dry_run: bool = False) -> Item:
    if item.price < 0:
        raise HTTPException(status_code=422, detail="price must not be negative")
    created = Item(id=max(ITEMS) + 1, **item.model_dump())
    if not dry_run:
        ITEMS[created.id] = created
    return created


@app.put("/items/{item_id}", operation_id="replace_item")
def replace_item(item_id: int, item: ItemIn) -> Item:
    ITEMS[item_id] = Item(id=item_id, **item.model_dump())
    return ITEMS[item_id]


@app.delete("/items/{item_id}", status_code=204)
def delete_item(item_id: int) -> Response:
    # No operation_id: the tool's name comes from FastAPI's generated one.
    ITEMS.pop(item_id, None)
    return Response(status_code=204)


@app.post("/login", operation_id="login")
def login(username: str = Form(), remember: bool = Form(default=False)) -> dict:
    return {"user": username, "remember": remember}


@app.get("/whoami", operation_id="whoami")
def whoami(session: str | None = Cookie(default=None)) -> dict:
    return {"session": session}


api_key = APIKeyHeader(name="X-API-Key")


@app.get("/admin/stats", operation_id="admin_stats")
def admin_stats(key: str = Depends(api_key)) -> dict:
    if key != API_KEY:
        raise HTTPException(status_code=403, detail="bad key")
    return {"items": len(ITEMS)}


@app.get("/flaky", operation_id="flaky")
def flaky() -> JSONResponse:
    return JSONResponse({"detail": "database unavailable"}, status_code=503)


@app.post("/upload", operation_id="upload")
async def upload(file: UploadFile) -> dict:
    return {"size": len(await file.read())}

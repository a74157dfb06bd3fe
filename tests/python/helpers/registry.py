"""An independent reader of the index registry format (src/index/registry.h,
docs/indexes.md "Storage"): format 1 (one file) and format 2 (a root that
lists segments, applied oldest first: a segment's "removed" drops earlier
entries of those data files, then its entries replace earlier ones with the
same (data-file, field-id, kind)).  Tests use it instead of the library to
look at what was written."""
import json
import pathlib


def _key(e):
    return (e["data-file"], e["field-id"], e["kind"])


def compose(segments):
    """The entries that survive segments (parsed segment documents, oldest
    first), in order."""
    entries = {}
    for seg in segments:
        dead = set(seg.get("removed", []))
        if dead:
            entries = {k: e for k, e in entries.items() if k[0] not in dead}
        for e in seg.get("entries", []):
            entries.pop(_key(e), None)
            entries[_key(e)] = e
    return list(entries.values())


def read(location, rel):
    """{"format-version", "declared", "entries", "root", "segments"} of the
    registry version `rel` (relative to the table location, or absolute):
    root is its file, segments the files of its segments (format 2)."""
    from conftest import as_path   # local paths, file:// and s3:// URIs
    loc = as_path(location)
    rel = str(rel)
    root_path = as_path(rel) if rel.startswith(("/", "file:", "s3://", "s3a://")) else loc / rel
    root = json.loads(root_path.read_text())
    out = {"format-version": root["format-version"], "declared": root.get("declared", []),
           "root": str(root_path), "segments": []}
    if root["format-version"] == 1:
        out["entries"] = root.get("entries", [])
        return out
    segs = []
    for s in root["segments"]:
        p = loc / s["path"]
        data = p.read_bytes()
        assert len(data) == s["bytes"], (p, len(data), s["bytes"])
        doc = json.loads(data)
        assert doc["segment"] is True and len(doc["entries"]) == s["entries"], p
        segs.append(doc)
        out["segments"].append(str(p))
    out["entries"] = compose(segs)
    return out


def read_current(location, properties):
    """The registry named by the table properties, or None."""
    rel = properties.get("hyperstream.index-registry")
    return read(location, rel) if rel else None


def roots(location):
    """Every registry root file on disk under <location>/index/registry."""
    from conftest import as_path   # local paths, file:// and s3:// URIs
    d = as_path(str(location)) / "index" / "registry"
    return sorted(f for f in d.glob("*.json") if not f.name.startswith("seg-"))

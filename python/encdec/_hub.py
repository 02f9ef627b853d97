"""Models by name from the Hugging Face hub, as faster-whisper gets them:
its size names ("large-v3") map to its repositories, a repository id
("openai/whisper-base") is taken as it is. The files a model needs are
downloaded into the cache folder scripts/fetch-model.sh would use
(whisper-<size>, or the id's last part), through a .partial folder renamed
once complete: a failed download leaves nothing that looks like a model.
$HF_ENDPOINT names a mirror, $HF_TOKEN is sent when set."""

import json
import os
import shutil
import urllib.error
import urllib.request

from . import _native as N

# faster-whisper 1.2.1's names of its conversions
SIZES = {
    "tiny.en": "Systran/faster-whisper-tiny.en", "tiny": "Systran/faster-whisper-tiny",
    "base.en": "Systran/faster-whisper-base.en", "base": "Systran/faster-whisper-base",
    "small.en": "Systran/faster-whisper-small.en", "small": "Systran/faster-whisper-small",
    "medium.en": "Systran/faster-whisper-medium.en", "medium": "Systran/faster-whisper-medium",
    "large-v1": "Systran/faster-whisper-large-v1", "large-v2": "Systran/faster-whisper-large-v2",
    "large-v3": "Systran/faster-whisper-large-v3", "large": "Systran/faster-whisper-large-v3",
    "distil-large-v2": "Systran/faster-distil-whisper-large-v2",
    "distil-medium.en": "Systran/faster-distil-whisper-medium.en",
    "distil-small.en": "Systran/faster-distil-whisper-small.en",
    "distil-large-v3": "Systran/faster-distil-whisper-large-v3",
    "distil-large-v3.5": "distil-whisper/distil-large-v3.5-ct2",
    "large-v3-turbo": "mobiuslabsgmbh/faster-whisper-large-v3-turbo",
    "turbo": "mobiuslabsgmbh/faster-whisper-large-v3-turbo",
}
_CANON = {"large": "large-v3", "turbo": "large-v3-turbo"}

# what encdec reads of a repository (the weights: one of three layouts)
_OPTIONAL = ["generation_config.json", "tokenizer.json", "vocab.json", "merges.txt",
             "added_tokens.json", "special_tokens_map.json", "tokenizer_config.json",
             "preprocessor_config.json", "vocabulary.json", "vocabulary.txt", "spiece.model"]


def folder_of(name):
    """(repository, cache folder) of a downloadable name, or None."""
    if name in SIZES:
        return SIZES[name], "whisper-" + _CANON.get(name, name)
    for size, repo in SIZES.items():
        if name == repo:
            return repo, "whisper-" + _CANON.get(size, size)
    parts = name.split("/")
    if len(parts) == 2 and all(parts) and not name.startswith((".", "/")):
        return name, parts[1]
    return None


def _endpoint():
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")


def _get(url, dest=None, timeout=60):
    req = urllib.request.Request(url)
    if os.environ.get("HF_TOKEN"):
        req.add_header("Authorization", "Bearer " + os.environ["HF_TOKEN"])
    with urllib.request.urlopen(req, timeout=timeout) as r:
        if dest is None:
            return r.read()
        with open(dest, "wb") as f:
            shutil.copyfileobj(r, f, 1 << 20)
    return None


def _fail(msg):
    return N.EncdecError(N.ERR_NO_MODEL, msg)


def download(name, root):
    """The model `name` into root/<folder>; returns that folder. Raises
    EncdecError with one true line when the hub cannot be reached, the
    repository does not exist or needs a token, or a file fails."""
    repo, folder = folder_of(name)
    hub = _endpoint()
    dest = os.path.join(root, folder)
    part = dest + ".partial"
    try:
        _get(f"{hub}/api/models/{repo}", timeout=30)
    except urllib.error.HTTPError as e:
        if e.code in (401, 403):
            raise _fail(f"{repo} needs a Hugging Face token with access to it (HF_TOKEN; HTTP "
                        f"{e.code})") from None
        if e.code == 404:
            raise _fail(f"no repository {repo} on the Hugging Face hub ({hub})") from None
        raise _fail(f"the Hugging Face hub answered HTTP {e.code} for {repo}") from None
    except (urllib.error.URLError, OSError) as e:
        raise _fail(f"cannot reach {hub} to download {repo} ({getattr(e, 'reason', e)}); "
                    f"give a model directory instead") from None
    base = f"{hub}/{repo}/resolve/main"
    shutil.rmtree(part, ignore_errors=True)
    os.makedirs(part)
    try:
        def fetch(f, needed):
            try:
                _get(f"{base}/{f}", os.path.join(part, f))
                return True
            except urllib.error.HTTPError as e:
                if os.path.exists(os.path.join(part, f)):
                    os.remove(os.path.join(part, f))
                if needed or e.code != 404:
                    raise _fail(f"downloading {f} of {repo} failed (HTTP {e.code})") from None
                return False
        fetch("config.json", True)
        if not fetch("model.safetensors", False):
            if fetch("model.safetensors.index.json", False):
                with open(os.path.join(part, "model.safetensors.index.json")) as f:
                    for shard in sorted(set(json.load(f)["weight_map"].values())):
                        fetch(shard, True)
            elif not fetch("model.bin", False):
                raise _fail(f"{repo} has no model.safetensors, index or model.bin")
        for f in _OPTIONAL:
            fetch(f, False)
    except (urllib.error.URLError, OSError) as e:
        shutil.rmtree(part, ignore_errors=True)
        raise _fail(f"downloading {repo} from {hub} failed ({getattr(e, 'reason', e)})") from None
    except BaseException:
        shutil.rmtree(part, ignore_errors=True)
        raise
    shutil.rmtree(dest, ignore_errors=True)
    os.rename(part, dest)
    return dest

"""`[settings] embedder` and `[models.NAME]` in docdex.toml: read, written back, and
refused at load with one clear sentence."""

from __future__ import annotations

import pytest

from docdex.cli import main
from docdex.index_format.config import ConfigError, load_config, save_config
from docdex.index_format.layout import DataDir
from docdex.index_format.model_tables import EndpointEmbedder, OnnxEmbedder, RerankEndpoint

from gitrepo import Workspace


def load(tmp_path, text: str):
    data = DataDir(tmp_path)
    data.root.mkdir(parents=True, exist_ok=True)
    data.config.write_text(text)
    return data, load_config(data)


def test_a_docdex_toml_naming_no_embedder_keeps_the_float32_graph(tmp_path) -> None:
    _, config = load(tmp_path, "[settings]\nkeep_versions = 2\n")
    assert config.settings.embedder == "minilm" and config.embedder_spec() is None


def test_a_new_data_directory_embeds_passages_with_the_int8_graph(tmp_path, capsys) -> None:
    ws = Workspace(tmp_path / "repo")
    data = DataDir(tmp_path / "data")
    assert main(["--data", str(data.root), "source", "add", "docs", str(ws.bare)]) == 0
    capsys.readouterr()
    assert 'embedder = "minilm-int8"' in data.config.read_text()
    assert load_config(data).settings.embedder == "minilm-int8"
    other = DataDir(tmp_path / "other")
    assert main(["--data", str(other.root), "settings", "set", "keep_versions", "2"]) == 0
    assert load_config(other).settings.embedder == "minilm-int8"


def test_models_are_read_and_written_back(tmp_path) -> None:
    data, config = load(
        tmp_path,
        """
[settings]
embedder = "ollama"
reranker = "tei"

[models.ollama]
kind = "openai"
url = "http://127.0.0.1:11434/v1"
model = "nomic-embed-text"
query_prefix = "search_query: "
passage_prefix = "search_document: "
api_key_env = "OLLAMA_KEY"

[models.e5]
kind = "onnx"
path = "/srv/models/e5-small-v2"
pooling = "mean"

[models.tei]
kind = "rerank"
url = "http://127.0.0.1:8080/rerank"
""",
    )
    spec = config.embedder_spec()
    assert isinstance(spec, EndpointEmbedder) and spec.model == "nomic-embed-text"
    assert spec.passage_prefix == "search_document: " and spec.retries == 4
    assert isinstance(config.models["e5"], OnnxEmbedder)
    assert isinstance(config.reranker_spec(), RerankEndpoint)
    save_config(data, config)  # `docdex source add` and the like write the file back
    assert load_config(data) == config


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            'embedder = "nope"',
            'embedder \'nope\' is neither "minilm", "minilm-int8" nor a [models.nope] table',
        ),
        (
            'embedder = "m"\n[models.m]\nkind = "openai"\nurl = "http://h/v1"\nmodel = "x"\n'
            'api_key_env = "sk-abc123"',
            "api_key_env 'sk-abc123' is not a variable name",
        ),
        (
            'embedder = "m"\n[models.m]\nkind = "openai"\nurl = "ftp://h"\nmodel = "x"',
            "not an http",
        ),
        ('embedder = "m"\n[models.m]\nkind = "onnx"\npath = "/x"\npooling = "max"', "pooling"),
        ('embedder = "m"\n[models.m]\nkind = "gguf"\npath = "/x"', "Invalid value 'gguf'"),
        ('embedder = "m"\n[models.m]\nkind = "onnx"\npath = "/x"\nkey = "v"', "unknown field"),
        (
            'embedder = "m"\nlate_interaction = true\n[models.m]\nkind = "onnx"\npath = "/x"',
            'token vectors: it needs embedder = "minilm"',
        ),
        ('embedder = "r"\n[models.r]\nkind = "rerank"\nurl = "http://h/rerank"', "names a rerank"),
        ('reranker = "m"\n[models.m]\nkind = "onnx"\npath = "/x"', "names an embedder"),
    ],
)
def test_what_cannot_be_used_is_refused_at_load(tmp_path, text: str, message: str) -> None:
    settings, _, models = text.partition("[models")
    body = f"[settings]\n{settings}\n" + (f"[models{models}\n" if models else "")
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, body)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)

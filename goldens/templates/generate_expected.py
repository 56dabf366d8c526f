#!/usr/bin/env python3
"""Render the chat-template goldens with Python Jinja2, the way Hugging Face transformers does.

Usage (from the repository root; needs only jinja2 >= 3.1):
    pip install --no-index --find-links /opt/wheels jinja2     # if it is not installed yet
    python3 goldens/templates/generate_expected.py

The environment below mirrors transformers' `_compile_jinja_template` / `render_jinja_template`
(src/transformers/utils/chat_template_utils.py): ImmutableSandboxedEnvironment(trim_blocks=True,
lstrip_blocks=True) with the loopcontrols extension, a `tojson` filter that calls json.dumps with
ensure_ascii=False (and the indent/separators/sort_keys options), `raise_exception` raising
TemplateError, `strftime_now`, and the render call
`template.render(messages=..., tools=None, documents=None, add_generation_prompt=..., **special_tokens, **kwargs)`.
The `{% generation %}` tag of transformers' AssistantTracker extension is not used by these templates.

Writes goldens/templates/expected/<template>/<case>.txt (UTF-8, exact bytes of the rendered prompt)
and goldens/templates/expected/index.json, which the Java test ChatTemplateGoldenTest walks.
"""

import json
import os
import sys
from datetime import datetime

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))

# name -> tokenizer_config.json (repository-relative); see README.md for where each came from.
TEMPLATES = {
    "tiny-llama-h128": "models/tiny-llama-h128/tokenizer_config.json",
    "qwen3": "goldens/templates/sources/qwen3/tokenizer_config.json",
    "llama3_1": "goldens/templates/sources/llama3_1/tokenizer_config.json",
    "gemma3": "goldens/templates/sources/gemma3/tokenizer_config.json",
    "features": "goldens/templates/sources/features/chat_template.jinja",
}

# The special-token attributes transformers puts into the render context (special_tokens_map).
SPECIAL_TOKEN_KEYS = ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token",
                      "mask_token", "additional_special_tokens"]


def compile_template(source):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.now().strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env.from_string(source)


def token_content(value):
    # tokenizer_config.json may store a special token as a string or as an AddedToken dict.
    if isinstance(value, dict):
        return value.get("content")
    if isinstance(value, list):
        return [token_content(v) for v in value]
    return value


def special_tokens(config):
    out = {}
    for key in SPECIAL_TOKEN_KEYS:
        value = token_content(config.get(key))
        if value is not None and value != []:
            out[key] = value
    return out


def load_config(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        if path.endswith(".jinja"):
            # A bare template file: the test supplies these two special tokens.
            return {"chat_template": f.read(), "bos_token": "<s>", "eos_token": "</s>"}
        return json.load(f)


def render(template, config, messages, add_generation_prompt, variables):
    context = dict(special_tokens(config))
    context.update(variables)
    return template.render(messages=messages, tools=None, documents=None,
                           add_generation_prompt=add_generation_prompt, **context)


def main():
    with open(os.path.join(HERE, "conversations.json"), encoding="utf-8") as f:
        spec = json.load(f)
    conversations = {c["name"]: c["messages"] for c in spec["conversations"]}

    cases = []
    for name in TEMPLATES:
        if name == "features":
            continue
        for conv in spec["conversations"]:
            for agp in (False, True):
                cases.append({"template": name, "conversation": conv["name"], "add_generation_prompt": agp,
                              "variables": {}})
    for extra in spec["extra_cases"]:
        cases.append(dict(extra))

    index = {"jinja2_version": jinja2.__version__, "python": sys.version.split()[0], "cases": []}
    compiled = {}
    for case in cases:
        name = case["template"]
        if name not in compiled:
            config = load_config(TEMPLATES[name])
            compiled[name] = (compile_template(config["chat_template"]), config)
        template, config = compiled[name]
        messages = case.get("messages") or conversations[case["conversation"]]
        variables = case.get("variables", {})
        suffix = ".gen" if case["add_generation_prompt"] else ".nogen"
        tag = "".join("." + k + "-" + json.dumps(v) for k, v in sorted(variables.items())
                      if k != "payload")
        file_name = f"{name}/{case['conversation']}{tag}{suffix}.txt"
        entry = {"template": name, "config": TEMPLATES[name], "conversation": case["conversation"],
                 "messages": messages, "add_generation_prompt": case["add_generation_prompt"],
                 "variables": variables}
        try:
            text = render(template, config, messages, case["add_generation_prompt"], variables)
        except jinja2.exceptions.TemplateError as e:
            entry["error"] = str(e)
            index["cases"].append(entry)
            continue
        path = os.path.join(HERE, "expected", file_name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        entry["expected"] = "expected/" + file_name
        index["cases"].append(entry)

    with open(os.path.join(HERE, "expected", "index.json"), "w", encoding="utf-8", newline="\n") as f:
        json.dump(index, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"{len(index['cases'])} cases written with jinja2 {jinja2.__version__}")


if __name__ == "__main__":
    main()

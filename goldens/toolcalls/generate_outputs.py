#!/usr/bin/env python3
"""Assistant outputs with tool calls and reasoning, rendered by real chat templates, for ToolCallGoldenTest.

Usage (from the repository root; needs only jinja2 >= 3.1):
    python3 goldens/toolcalls/generate_outputs.py

For each case the conversation is rendered twice with the Jinja2 environment of transformers'
apply_chat_template (as goldens/templates/generate_expected.py): without the final assistant message and with the
generation prompt, then with it. The difference, less the template's end-of-turn text, is exactly what the model
writes when it makes those calls. expected.json holds, per case, the template, that output, and the content,
reasoning and calls a parser must recover from it.
"""
import json
import os
from datetime import datetime

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))


def env():
    e = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    e.filters["tojson"] = lambda x, ensure_ascii=False, indent=None, separators=None, sort_keys=False: json.dumps(
        x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)
    e.globals["raise_exception"] = raise_exception
    e.globals["strftime_now"] = lambda fmt: datetime(2026, 1, 15, 12, 0, 0).strftime(fmt)
    return e


def source(name):
    if name == "qwen3":
        return json.load(open(os.path.join(ROOT, "goldens/templates/sources/qwen3/tokenizer_config.json")))["chat_template"]
    if name == "tiny-llama-h128":
        return json.load(open(os.path.join(ROOT, "models/tiny-llama-h128/tokenizer_config.json")))["chat_template"]
    return open(os.path.join(HERE, "sources", name + ".jinja")).read()


TEMPLATES = {
    # name: (special tokens, end-of-turn text after the assistant's output)
    "qwen3": ({"bos_token": None, "eos_token": "<|im_end|>"}, "<|im_end|>\n"),
    "tiny-llama-h128": ({"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"}, "<|im_end|>\n"),
    "llama3_1_json": ({"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}, "<|eot_id|>"),
    "mistral_small_3_1": ({"bos_token": "<s>", "eos_token": "</s>"}, "</s>"),
    "mistral_v11_args": ({"bos_token": "<s>", "eos_token": "</s>"}, "</s>"),
}

WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                          "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}}
TIME = {"type": "function", "function": {"name": "get_time", "description": "Local time in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


def call(i, name, args):
    return {"id": "call%09d" % i, "type": "function", "function": {"name": name, "arguments": args}}


CASES = [
    # name, template, assistant message, tools
    ("one-call", ["qwen3", "tiny-llama-h128", "llama3_1_json", "mistral_small_3_1", "mistral_v11_args"],
     {"role": "assistant", "content": "", "tool_calls": [call(1, "get_weather", {"city": "Paris", "unit": "celsius"})]},
     [WEATHER, TIME]),
    ("two-calls", ["qwen3", "tiny-llama-h128", "mistral_small_3_1", "mistral_v11_args"],
     {"role": "assistant", "content": "", "tool_calls": [call(1, "get_weather", {"city": "Zürich \"CH\""}),
                                                         call(2, "get_time", {"city": "Oslo"})]},
     [WEATHER, TIME]),
    ("empty-arguments", ["qwen3", "tiny-llama-h128", "llama3_1_json", "mistral_small_3_1", "mistral_v11_args"],
     {"role": "assistant", "content": "", "tool_calls": [call(3, "get_time", {})]}, [TIME]),
    ("reasoning-then-call", ["qwen3"],
     {"role": "assistant", "content": "", "reasoning_content": "The user asks for the weather; I call get_weather.",
      "tool_calls": [call(4, "get_weather", {"city": "Lyon"})]}, [WEATHER]),
    ("reasoning-then-answer", ["qwen3"],
     {"role": "assistant", "content": "It is sunny in Lyon.", "reasoning_content": "The tool said sunny."}, []),
    ("plain-answer", ["qwen3", "tiny-llama-h128", "llama3_1_json", "mistral_small_3_1", "mistral_v11_args"],
     {"role": "assistant", "content": "I can answer that without a tool: 42."}, [WEATHER]),
]


def main():
    e = env()
    out = []
    for name, templates, assistant, tools in CASES:
        for t in templates:
            special, end = TEMPLATES[t]
            tpl = e.from_string(source(t))
            conv = [{"role": "user", "content": "What is the weather in Paris?"}]
            kw = dict(special, tools=tools or None, documents=None)
            prefix = tpl.render(messages=conv, add_generation_prompt=True, **kw)
            full = tpl.render(messages=conv + [assistant], add_generation_prompt=False, **kw)
            assert full.startswith(prefix), (name, t)
            output = full[len(prefix):]
            assert output.endswith(end), (name, t, output)
            output = output[:-len(end)]
            calls = [{"name": c["function"]["name"], "arguments": c["function"]["arguments"]}
                     for c in assistant.get("tool_calls", [])]
            out.append({"case": name, "template": t, "prompt": prefix, "tools": tools, "output": output, "content": assistant["content"],
                        "reasoning": assistant.get("reasoning_content"), "calls": calls})
    with open(os.path.join(HERE, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(len(out), "cases")


if __name__ == "__main__":
    main()

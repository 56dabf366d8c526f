package io.tqserve.model;

import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;

/** The decoder architectures tqserve loads, keyed by the Hugging Face {@code architectures} entry. */
public enum Architecture {
    LLAMA("LlamaForCausalLM", false, false),
    MISTRAL("MistralForCausalLM", false, false),
    QWEN2("Qwen2ForCausalLM", true, false),
    QWEN3("Qwen3ForCausalLM", false, true);

    private final String hfName;
    private final boolean qkvBias;
    private final boolean qkNorm;

    Architecture(String hfName, boolean qkvBias, boolean qkNorm) {
        this.hfName = hfName;
        this.qkvBias = qkvBias;
        this.qkNorm = qkNorm;
    }

    public String hfName() {
        return hfName;
    }

    /** q/k/v projections carry biases (Qwen2). */
    public boolean qkvBias() {
        return qkvBias;
    }

    /** Per-head RMSNorm of q and k before RoPE (Qwen3). */
    public boolean qkNorm() {
        return qkNorm;
    }

    public static Architecture fromHf(List<String> architectures) {
        for (String a : architectures) {
            for (Architecture arch : values()) {
                if (arch.hfName.equals(a)) {
                    return arch;
                }
            }
        }
        throw new IllegalArgumentException("unsupported architecture " + architectures + "; supported: "
                + Arrays.stream(values()).map(Architecture::hfName).collect(Collectors.joining(", ")));
    }
}

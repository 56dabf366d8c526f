package io.tqserve.kv;

import io.tqserve.backend.cpu.CpuBackend;
import io.tqserve.model.ModelConfig;
import io.tqserve.model.ModelWeights;
import io.tqserve.model.Safetensors;
import io.tqserve.model.Transformer;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The embedded tiny Llama's forward pass on a two-thread CPU backend, loaded once per test class: the setup of the
 * KV cache and store tests.
 */
public abstract class TinyTransformerFixture {
    protected static CpuBackend backend;
    protected static Safetensors st;
    protected static Transformer t;

    @BeforeAll
    public static void loadTinyTransformer() throws Exception {
        Path m = Path.of("models/tiny-llama-h128");
        ModelConfig c = ModelConfig.load(m);
        backend = CpuBackend.create(2);
        st = Safetensors.open(m);
        t = new Transformer(c, ModelWeights.load(st, c), backend);
    }

    @AfterAll
    public static void closeTinyTransformer() {
        st.close();
        backend.close();
    }
}

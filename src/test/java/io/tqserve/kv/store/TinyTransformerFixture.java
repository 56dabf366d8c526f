package io.tqserve.kv.store;

import io.tqserve.backend.cpu.CpuBackend;
import io.tqserve.model.ModelConfig;
import io.tqserve.model.ModelWeights;
import io.tqserve.model.Safetensors;
import io.tqserve.model.Transformer;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** The embedded tiny Llama's forward pass on a two-thread CPU backend, loaded once per test class. */
abstract class TinyTransformerFixture {
    static CpuBackend backend;
    static Safetensors st;
    static Transformer t;

    @BeforeAll
    static void loadTinyTransformer() throws Exception {
        Path m = Path.of("models/tiny-llama-h128");
        ModelConfig c = ModelConfig.load(m);
        backend = CpuBackend.create(2);
        st = Safetensors.open(m);
        t = new Transformer(c, ModelWeights.load(st, c), backend);
    }

    @AfterAll
    static void closeTinyTransformer() {
        st.close();
        backend.close();
    }
}

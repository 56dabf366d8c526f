package io.tqserve.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

class ModelConfigTest {

    @Test
    void readsNewerRopeParametersAndDtypeForm() throws Exception {
        ModelConfig c = ModelConfig.load(Path.of("models/tiny-llama-h128"));
        assertEquals(Architecture.LLAMA, c.architecture());
        assertEquals(128, c.headDim());
        assertEquals(10000.0, c.ropeTheta());
        assertEquals("bfloat16", c.dtype());
        assertEquals("default", c.ropeScaling().type());
        assertTrue(c.tieEmbeddings());
        assertEquals(java.util.Set.of(0, 2),
                GenerationConfig.load(Path.of("models/tiny-llama-h128"), c.eosTokenIds()).eosTokenIds());
    }

    @Test
    void readsOlderTopLevelRopeThetaTorchDtypeAndLlama3Scaling() throws Exception {
        Path dir = Path.of("goldens/models/llama-tiny-oldcfg");
        ModelConfig c = ModelConfig.load(dir);
        assertEquals(500000.0, c.ropeTheta());
        assertEquals("float16", c.dtype());
        assertEquals("llama3", c.ropeScaling().type());
        assertEquals(64, c.ropeScaling().originalMaxPositions());
        // inverse frequencies equal transformers' (recorded by the generator)
        JsonNode ref = JsonMapper.shared().readTree(Files.readString(dir.resolve("reference_outputs.json")))
                .path("model").path("rope_inv_freq");
        float[] inv = c.ropeScaling().inverseFrequencies(c.ropeTheta(), c.headDim());
        assertEquals(ref.size(), inv.length);
        for (int i = 0; i < inv.length; i++) {
            assertEquals(ref.get(i).asDouble(), inv[i], 1e-6 * Math.max(1e-3, ref.get(i).asDouble()) + 1e-12, "inv_freq " + i);
        }
    }

    @Test
    void derivesHeadDimFromHiddenSizeWhenAbsentAndDetectsQwenFamilies() throws Exception {
        ModelConfig q2 = ModelConfig.load(Path.of("goldens/models/qwen2-tiny-h64"));
        assertEquals(Architecture.QWEN2, q2.architecture());
        assertEquals(64, q2.headDim());
        assertTrue(q2.architecture().qkvBias());
        ModelConfig q3 = ModelConfig.load(Path.of("goldens/models/qwen3-tiny-h64"));
        assertEquals(Architecture.QWEN3, q3.architecture());
        assertEquals(64, q3.headDim());
        assertTrue(q3.architecture().qkNorm());
        assertFalse(q3.qDim() == q3.dim(), "explicit head_dim differs from hidden/heads");
    }

    @Test
    void unsupportedArchitectureFailsListingTheSupportedOnes() {
        JsonNode cfg = JsonMapper.shared().readTree("""
                {"architectures":["GPT2LMHeadModel"],"hidden_size":64,"num_attention_heads":2,
                 "num_hidden_layers":1,"intermediate_size":128,"vocab_size":10}""");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ModelConfig.parse(cfg));
        assertTrue(e.getMessage().contains("GPT2LMHeadModel"), e.getMessage());
        for (Architecture a : Architecture.values()) {
            assertTrue(e.getMessage().contains(a.hfName()), e.getMessage());
        }
    }

    @Test
    void unsupportedRopeScalingIsRefusedByName() {
        JsonNode cfg = JsonMapper.shared().readTree("""
                {"architectures":["LlamaForCausalLM"],"hidden_size":64,"num_attention_heads":2,
                 "num_hidden_layers":1,"intermediate_size":128,"vocab_size":10,
                 "rope_scaling":{"rope_type":"yarn","factor":4.0}}""");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ModelConfig.parse(cfg));
        assertTrue(e.getMessage().contains("yarn"), e.getMessage());
    }
}

package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.tqserve.constraint.AllocationMeter;
import io.tqserve.constraint.CompileObserver;
import io.tqserve.constraint.ConstraintLimits;
import io.tqserve.constraint.SchemaCompiler;
import io.tqserve.constraint.TokenConstraint;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.http.HttpStatus;

/**
 * A compile's memory budget ({@code tqserve.structured-output.compile-memory}): on the compile pool, a schema whose
 * compile allocates more than the budget is refused with the 400 the other budgets give, naming the keyword being
 * compiled, within the time the allocation takes (far below the compile's time budget); the same schema compiles
 * under a budget above what it allocates, and so does a small schema under the small budget.
 */
class ConstraintPoolMemoryTest {
    static final long SMALL = 2L << 20;

    /** An object of 4,000 declared string members: some tens of MB of compile allocations. */
    static Map<String, Object> wide() {
        Map<String, Object> props = new LinkedHashMap<>();
        for (int i = 0; i < 4_000; i++) {
            props.put("member" + i, Map.of("type", "string", "maxLength", 8 + i % 5));
        }
        return Map.of("type", "object", "properties", props);
    }

    static ConstraintPool pool(long compileBytes) {
        // the meter given here is replaced: the settings count every compile's allocations (CompileAllocation)
        return new ConstraintPool(new StructuredOutputSettings(1, 4, 1 << 20, Duration.ofSeconds(20),
                ConstraintLimits.DEFAULT.withCompileBytes(compileBytes, AllocationMeter.NONE), false),
                new ApiSettings(List.of(), false, 512, Duration.ofSeconds(5), Duration.ofSeconds(1)),
                CompileObserver.NONE);
    }

    static TokenConstraint compile(ConstraintPool pool, Object schema) throws Exception {
        ConstraintLimits limits = pool.settings().limits();
        return pool.submit(() -> new TokenConstraint(SchemaCompiler.compileForGeneration(schema, limits),
                ConstraintCacheTest.VOCABULARY, limits), "response_format").result().get(60, TimeUnit.SECONDS);
    }

    @Test
    void aCompileAllocatingBeyondItsBudgetIsA400NamingTheKeyword() throws Exception {
        assumeTrue(CompileAllocation.supported(), "the JVM counts no per-thread allocations");
        ConstraintPool pool = pool(SMALL);
        try {
            long t0 = System.nanoTime();
            assertThatThrownBy(() -> compile(pool, wide())).isInstanceOf(ExecutionException.class).cause()
                    .isInstanceOfSatisfying(ApiException.class, e -> {
                        assertThat(e.status()).isEqualTo(HttpStatus.BAD_REQUEST);
                        assertThat(e.code()).isEqualTo("schema_too_complex");
                        assertThat(e.param()).isEqualTo("response_format");
                        assertThat(e.getMessage()).isEqualTo("the schema exceeds a constrained-decoding budget at "
                                + "'properties': the compile allocated more than 2 MB");
                    });
            assertThat(System.nanoTime() - t0).as("refused well before the 20 s time budget")
                    .isLessThan(Duration.ofSeconds(10).toNanos());
            // a small schema compiles under the small budget
            assertThat(compile(pool, Map.of("type", "object", "properties", Map.of("a", Map.of("type", "integer")),
                    "required", List.of("a"))).minTokens()).isPositive();
        } finally {
            pool.destroy();
        }
    }

    @Test
    void theSameSchemaCompilesUnderABudgetAboveWhatItAllocates() throws Exception {
        ConstraintPool pool = pool(ConstraintLimits.DEFAULT_COMPILE_BYTES);
        try {
            assertThat(compile(pool, wide()).minTokens()).isPositive();
        } finally {
            pool.destroy();
        }
    }
}

package io.tqserve.engine;

/** Runs before each sampling step of each sequence. Production uses {@link #NONE}; tests inject faults. */
@FunctionalInterface
public interface StepHook {
    StepHook NONE = (request, generated) -> {
    };

    void beforeSample(GenerationRequest request, int generated);
}

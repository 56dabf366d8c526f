package io.tqserve.management;

import io.tqserve.routing.ServingRuntime;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.stereotype.Component;

/**
 * Health contributor "model": OUT_OF_SERVICE while the weights load, UP once the lanes run, DOWN when loading
 * failed. It is part of the readiness group, so /actuator/health/readiness answers 503 until the model is loaded.
 */
@Component("model")
public final class ModelHealthIndicator implements HealthIndicator {
    private final ServingRuntime runtime;

    public ModelHealthIndicator(ServingRuntime runtime) {
        this.runtime = runtime;
    }

    @Override
    public Health health() {
        return switch (runtime.status()) {
            case LOADING -> Health.outOfService().withDetail("model", runtime.modelId())
                    .withDetail("state", "loading").build();
            case READY -> Health.up().withDetail("model", runtime.modelId()).build();
            case FAILED -> Health.down().withDetail("model", runtime.modelId())
                    .withDetail("error", runtime.failure().map(Throwable::getMessage).orElse("unknown")).build();
        };
    }
}

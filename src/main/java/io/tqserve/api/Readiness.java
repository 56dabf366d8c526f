package io.tqserve.api;

import io.tqserve.routing.ServingRuntime;
import org.springframework.http.HttpStatus;

/** 503 with Retry-After while the model loads (or after loading failed). */
final class Readiness {
    private Readiness() {
    }

    static ServingRuntime.Loaded require(ServingRuntime runtime, ApiSettings settings) {
        return runtime.loaded().orElseThrow(() -> runtime.status() == ServingRuntime.Status.FAILED
                ? new ApiException(HttpStatus.SERVICE_UNAVAILABLE, "service_unavailable", null, "model_failed",
                        "the model failed to load; see the server log", null)
                : new ApiException(HttpStatus.SERVICE_UNAVAILABLE, "service_unavailable", null, "model_loading",
                        "the model " + runtime.modelId() + " is still loading; retry shortly", settings.retryAfter()));
    }
}

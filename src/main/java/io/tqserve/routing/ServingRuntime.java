package io.tqserve.routing;

import io.tqserve.engine.Lane;
import io.tqserve.model.Model;
import io.tqserve.model.ModelConfig;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * What is being served: the model's identity and shape and the planned lanes (known at startup, before the
 * weights load), then — once loading finished — the loaded model and the routing service over the live lanes.
 * The API answers 503 and readiness is DOWN until {@link #status()} is {@link Status#READY}.
 */
public final class ServingRuntime {

    /** Loading state. */
    public enum Status {
        LOADING, READY, FAILED
    }

    /** The loaded model and the routing over its lanes. */
    public record Loaded(Model model, RoutingService routing) {
    }

    private final String modelId;
    private final ModelConfig modelConfig;
    private final String backend;
    private final List<LanePlan> plans;
    private final CompletableFuture<Loaded> loaded = new CompletableFuture<>();

    /**
     * @param modelId     the served model id
     * @param modelConfig the model's config.json
     * @param backend     the compute backend's name ("cpu", "mlx")
     * @param plans       the enabled lanes
     */
    public ServingRuntime(String modelId, ModelConfig modelConfig, String backend, List<LanePlan> plans) {
        this.modelId = modelId;
        this.modelConfig = modelConfig;
        this.backend = backend;
        this.plans = List.copyOf(plans);
    }

    public String modelId() {
        return modelId;
    }

    public ModelConfig modelConfig() {
        return modelConfig;
    }

    public String backend() {
        return backend;
    }

    public List<LanePlan> plans() {
        return plans;
    }

    public Optional<LanePlan> plan(Lane.Kind kind) {
        return plans.stream().filter(p -> p.kind() == kind).findFirst();
    }

    /** Marks the model loaded and the lanes running. */
    public void ready(Model model, RoutingService routing) {
        loaded.complete(new Loaded(model, routing));
    }

    /** Marks loading failed. */
    public void failed(Throwable cause) {
        loaded.completeExceptionally(cause);
    }

    public Status status() {
        if (!loaded.isDone()) {
            return Status.LOADING;
        }
        return loaded.isCompletedExceptionally() ? Status.FAILED : Status.READY;
    }

    /** Completes when loading finished (or fails with its cause). */
    public CompletableFuture<Loaded> whenLoaded() {
        return loaded.copy();
    }

    /** The loaded model and routing, or empty while loading or after a failure. */
    public Optional<Loaded> loaded() {
        return status() == Status.READY ? Optional.of(loaded.join()) : Optional.empty();
    }

    /** The live lane of a kind, once loaded. */
    public Optional<Lane> lane(Lane.Kind kind) {
        return loaded().flatMap(l -> l.routing().lane(kind));
    }

    /** Why loading failed, if it did. */
    public Optional<Throwable> failure() {
        if (status() != Status.FAILED) {
            return Optional.empty();
        }
        try {
            loaded.join();
            return Optional.empty();
        } catch (RuntimeException e) {
            return Optional.of(e.getCause() == null ? e : e.getCause());
        }
    }
}

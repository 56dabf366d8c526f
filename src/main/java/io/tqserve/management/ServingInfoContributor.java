package io.tqserve.management;

import io.tqserve.model.ModelConfig;
import io.tqserve.routing.LanePlan;
import io.tqserve.routing.ServingRuntime;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.boot.actuate.info.Info;
import org.springframework.boot.actuate.info.InfoContributor;
import org.springframework.stereotype.Component;

/**
 * /actuator/info: the served model (id, architecture, head dim, shape, weight bytes and format), the backend and each
 * lane's KV scheme.
 */
@Component
public final class ServingInfoContributor implements InfoContributor {
    private final ServingRuntime runtime;
    private final io.tqserve.model.WeightsInfo weights;

    public ServingInfoContributor(ServingRuntime runtime, io.tqserve.model.WeightsInfo weights) {
        this.runtime = runtime;
        this.weights = weights;
    }

    @Override
    public void contribute(Info.Builder builder) {
        ModelConfig c = runtime.modelConfig();
        Map<String, Object> model = new LinkedHashMap<>();
        model.put("id", runtime.modelId());
        model.put("architecture", c.architecture().hfName());
        model.put("headDim", c.headDim());
        model.put("layers", c.numLayers());
        model.put("numHeads", c.numHeads());
        model.put("numKvHeads", c.numKvHeads());
        model.put("maxPositions", c.maxPositions());
        model.put("weights", Map.of("bytes", weights.bytes(), "bits", weights.bits(), "groupSize",
                weights.groupSize(), "format", weights.format()));
        model.put("state", runtime.status().name().toLowerCase(java.util.Locale.ROOT));
        runtime.loaded().ifPresent(l -> model.put("fingerprint", l.model().fingerprint()));
        Map<String, Object> backend = new LinkedHashMap<>();
        backend.put("type", runtime.backend());
        runtime.loaded().ifPresent(l -> backend.put("description", l.model().transformer().backend().describe()));
        Map<String, Object> lanes = new LinkedHashMap<>();
        for (LanePlan p : runtime.plans()) {
            Map<String, Object> lane = new LinkedHashMap<>();
            lane.put("scheme", p.scheme().id());
            lane.put("kvBytesPerToken", p.layout().bytesPerToken());
            lane.put("compressionRatio", Math.round(p.layout().compressionRatio() * 1000) / 1000.0);
            lane.put("kvBudgetBytes", p.budgetBytes());
            lane.put("kvBudgetTokens", p.budgetBytes() / p.layout().bytesPerToken());
            lanes.put(p.kind().wireName(), lane);
        }
        builder.withDetail("model", model).withDetail("backend", backend).withDetail("lanes", lanes);
        runtime.loaded().ifPresent(l -> builder.withDetail("routing", Map.of("policy",
                l.routing().policy().name().toLowerCase(java.util.Locale.ROOT), "longContextThreshold",
                l.routing().longContextThreshold())));
    }
}

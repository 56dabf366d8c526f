package io.tqserve.template;

import java.time.Clock;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * What a template is compiled with: the special tokens transformers puts into every render
 * ({@code bos_token}, {@code eos_token}, ... as strings, {@code additional_special_tokens} as a list) and the clock
 * behind {@code strftime_now} (the system clock in the default time zone, as Python's {@code datetime.now()};
 * tests pass a fixed one).
 */
public record TemplateOptions(Map<String, Object> specialTokens, Clock clock) {

    public TemplateOptions {
        specialTokens = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(specialTokens));
        Objects.requireNonNull(clock, "clock");
    }

    public static TemplateOptions of(Map<String, ?> specialTokens) {
        return new TemplateOptions(new LinkedHashMap<>(specialTokens), Clock.systemDefaultZone());
    }

    public TemplateOptions withClock(Clock clock) {
        return new TemplateOptions(specialTokens, clock);
    }
}

package io.tqserve.config;

import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/** Prints a {@link StartupValidationException} as Spring Boot's "APPLICATION FAILED TO START" report. */
public final class StartupFailureAnalyzer extends AbstractFailureAnalyzer<StartupValidationException> {
    @Override
    protected FailureAnalysis analyze(Throwable rootFailure, StartupValidationException cause) {
        return new FailureAnalysis("tqserve cannot serve this configuration: " + cause.getMessage(),
                "Change the setting named above (application.yml, TQSERVE_* environment variables or "
                        + "--tqserve.<key>=<value>); docs/configuration.md lists every key.", cause);
    }
}

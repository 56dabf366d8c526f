package io.tqserve.config;

import org.springframework.boot.autoconfigure.SpringBootApplication;

/** The Spring Boot application: the API, the serving composition root and the management beans. */
@SpringBootApplication(scanBasePackages = {"io.tqserve.config", "io.tqserve.api", "io.tqserve.management"})
public class TqserveApplication {
}

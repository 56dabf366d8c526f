package io.tqserve;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The import rules of docs/architecture.md. */
class ArchitectureRulesTest {
    static JavaClasses classes;

    @BeforeAll
    static void importClasses() {
        classes = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("io.tqserve");
    }

    @Test
    void springOnlyInApiConfigManagementAndCli() {
        noClasses().that().resideInAnyPackage("io.tqserve.engine..", "io.tqserve.model..", "io.tqserve.kv..",
                        "io.tqserve.backend..", "io.tqserve.routing..", "io.tqserve.template..")
                .should().dependOnClassesThat().resideInAnyPackage("org.springframework..")
                .check(classes);
    }

    @Test
    void backendDependsOnNothingOfTqserveOutsideItself() {
        noClasses().that().resideInAPackage("io.tqserve.backend..")
                .should().dependOnClassesThat().resideInAnyPackage("io.tqserve.api..", "io.tqserve.routing..",
                        "io.tqserve.engine..", "io.tqserve.model..", "io.tqserve.kv..", "io.tqserve.config..",
                        "io.tqserve.management..", "io.tqserve.cli..")
                .check(classes);
    }

    @Test
    void kvDependsOnlyOnBackendSpi() {
        noClasses().that().resideInAPackage("io.tqserve.kv..")
                .should().dependOnClassesThat().resideInAnyPackage("io.tqserve.api..", "io.tqserve.routing..",
                        "io.tqserve.engine..", "io.tqserve.model..", "io.tqserve.config..", "io.tqserve.management..",
                        "io.tqserve.cli..", "io.tqserve.backend.cpu..", "io.tqserve.backend.mlx..")
                .check(classes);
    }

    @Test
    void modelDependsOnlyOnBackendSpiAndKv() {
        noClasses().that().resideInAPackage("io.tqserve.model..")
                .should().dependOnClassesThat().resideInAnyPackage("io.tqserve.api..", "io.tqserve.routing..",
                        "io.tqserve.engine..", "io.tqserve.config..", "io.tqserve.management..", "io.tqserve.cli..",
                        "io.tqserve.backend.cpu..", "io.tqserve.backend.mlx..")
                .check(classes);
    }

    @Test
    void templateDependsOnlyOnTheJdkAndJackson() {
        noClasses().that().resideInAPackage("io.tqserve.template..")
                .should().dependOnClassesThat().resideOutsideOfPackages("io.tqserve.template..", "java..",
                        "tools.jackson..")
                .check(classes);
    }

    @Test
    void onlyTheTemplateApiIsPublic() {
        com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes().that().resideInAPackage("io.tqserve.template..")
                .and().areTopLevelClasses().and().arePublic()
                .should().haveSimpleNameStartingWith("ChatTemplate").orShould().haveSimpleNameStartingWith("Template")
                .check(classes);
    }

    @Test
    void engineDoesNotReachUpToTheEdge() {
        noClasses().that().resideInAPackage("io.tqserve.engine..")
                .should().dependOnClassesThat().resideInAnyPackage("io.tqserve.api..", "io.tqserve.routing..",
                        "io.tqserve.config..", "io.tqserve.management..", "io.tqserve.cli..")
                .check(classes);
    }

    @Test
    void routingSeesOnlyEngineAndKv() {
        noClasses().that().resideInAPackage("io.tqserve.routing..")
                .should().dependOnClassesThat().resideInAnyPackage("io.tqserve.api..", "io.tqserve.config..",
                        "io.tqserve.management..", "io.tqserve.cli..", "io.tqserve.backend.cpu..",
                        "io.tqserve.backend.mlx..")
                .check(classes);
    }

    @Test
    void apiDependsOnRoutingEngineAndModelButNotOnTheCompositionRoot() {
        noClasses().that().resideInAPackage("io.tqserve.api..")
                .should().dependOnClassesThat().resideInAnyPackage("io.tqserve.config..", "io.tqserve.management..",
                        "io.tqserve.cli..", "io.tqserve.backend.cpu..", "io.tqserve.backend.mlx..")
                .check(classes);
    }

    @Test
    void managementReadsRuntimeStateButNotTheCompositionRoot() {
        noClasses().that().resideInAPackage("io.tqserve.management..")
                .should().dependOnClassesThat().resideInAnyPackage("io.tqserve.config..",
                        "io.tqserve.backend.cpu..", "io.tqserve.backend.mlx..")
                .check(classes);
    }

    @Test
    void managementDoesNotDependOnApiOrCli() {
        noClasses().that().resideInAPackage("io.tqserve.management..")
                .should().dependOnClassesThat().resideInAnyPackage("io.tqserve.api..", "io.tqserve.cli..")
                .check(classes);
    }

    @Test
    void constraintDependsOnNothingOfTqserve() {
        noClasses().that().resideInAPackage("io.tqserve.constraint..")
                .should().dependOnClassesThat().resideInAnyPackage("io.tqserve.api..", "io.tqserve.routing..",
                        "io.tqserve.engine..", "io.tqserve.model..", "io.tqserve.kv..", "io.tqserve.backend..",
                        "io.tqserve.config..", "io.tqserve.management..", "io.tqserve.cli..", "io.tqserve.toolcall..",
                        "org.springframework..")
                .check(classes);
    }

    @Test
    void toolcallSeesOnlyConstraintTemplateAndModel() {
        noClasses().that().resideInAPackage("io.tqserve.toolcall..")
                .should().dependOnClassesThat().resideInAnyPackage("io.tqserve.api..", "io.tqserve.routing..",
                        "io.tqserve.engine..", "io.tqserve.kv..", "io.tqserve.backend..",
                        "io.tqserve.config..", "io.tqserve.management..", "io.tqserve.cli..", "org.springframework..")
                .check(classes);
    }

    /**
     * The MLX device has one owner, {@code MlxDevice}: no other class of the MLX backend takes a lock (every MLX
     * call goes through the owner's methods, which hold the device's lock and scope).
     */
    @Test
    void onlyTheMlxDeviceOwnerTakesALock() {
        noClasses().that().resideInAPackage("io.tqserve.backend.mlx..")
                .and().doNotHaveFullyQualifiedName("io.tqserve.backend.mlx.MlxDevice")
                .should().dependOnClassesThat().resideInAPackage("java.util.concurrent.locks..")
                .check(classes);
    }
}

package io.tqserve.api;

import static org.springframework.web.reactive.function.server.RequestPredicates.DELETE;
import static org.springframework.web.reactive.function.server.RequestPredicates.GET;
import static org.springframework.web.reactive.function.server.RequestPredicates.POST;

import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;

/** The OpenAI-compatible endpoints and Anthropic's Messages API (docs/api.md). */
@Configuration(proxyBeanMethods = false)
public class ApiRoutes {

    @Bean
    RouterFunction<ServerResponse> tqserveApi(GenerationHandler generation, TokenizeHandler tokens,
            SnapshotHandler snapshots) {
        return RouterFunctions.route()
                .route(POST("/v1/chat/completions"), generation::chat)
                .route(POST("/v1/completions"), generation::completions)
                .route(GET("/v1/models"), tokens::models)
                .route(GET("/v1/models/{id}"), tokens::model)
                .route(POST("/tokenize"), tokens::tokenize)
                .route(POST("/detokenize"), tokens::detokenize)
                .route(POST("/v1/kv/snapshots"), snapshots::create)
                .route(GET("/v1/kv/snapshots"), snapshots::list)
                .route(DELETE("/v1/kv/snapshots/{id}"), snapshots::delete)
                .build();
    }

    /** The protocols translated into chat requests (Anthropic's Messages API, OpenAI's Responses API). */
    @Bean
    RouterFunction<ServerResponse> tqserveProtocols(ProtocolHandler protocols) {
        return RouterFunctions.route()
                .route(POST("/v1/messages"), protocols::messages)
                .route(POST("/v1/messages/count_tokens"), protocols::countTokens)
                .route(POST("/v1/responses"), protocols::responses)
                .route(GET("/v1/responses/{id}"), protocols::getResponse)
                .route(DELETE("/v1/responses/{id}"), protocols::deleteResponse)
                .build();
    }
}

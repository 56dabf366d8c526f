package io.tqserve.model;

/** TEMPORARY placeholder. */
public record ChatMessage(String role, String content) {
}

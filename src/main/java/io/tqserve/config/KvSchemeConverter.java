package io.tqserve.config;

import io.tqserve.kv.KvScheme;
import org.springframework.boot.context.properties.ConfigurationPropertiesBinding;
import org.springframework.core.convert.converter.Converter;

/** Binds {@code tqserve.kv.scheme}; an invalid scheme or bit width fails binding with the accepted forms. */
@ConfigurationPropertiesBinding
public final class KvSchemeConverter implements Converter<String, KvScheme> {
    @Override
    public KvScheme convert(String source) {
        return KvScheme.parse(source);
    }
}

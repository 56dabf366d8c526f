package io.tqserve.cli;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.LogAxis;
import java.text.DecimalFormat;
import java.text.DecimalFormatSymbols;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.axis.NumberTickUnit;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;
import tools.jackson.databind.json.JsonMapper;

/** Writes the kv-curve table (Markdown), the JSON array and the KL-vs-bits plot (JFreeChart, PNG). */
final class KvCurveReport {
    private KvCurveReport() {
    }

    static void write(Path outDir, List<KvCurve.Row> rows, String command, String about) throws IOException {
        Files.createDirectories(outDir);
        Files.writeString(outDir.resolve("kv-curve.md"), markdown(rows, command, about));
        Files.writeString(outDir.resolve("kv-curve.json"), json(rows));
        plot(rows, outDir.resolve("kv-curve.png"));
    }

    static String markdown(List<KvCurve.Row> rows, String command, String about) {
        StringBuilder b = new StringBuilder();
        b.append("# KV scheme quality curve\n\n");
        b.append(about).append("\n\n");
        b.append("Command: `").append(command).append("`\n\n");
        b.append("| scheme | effective bits / KV element | vs bf16 | mean KL(bf16 ‖ scheme) | perplexity | top-1 agreement |\n");
        b.append("|---|---|---|---|---|---|\n");
        for (KvCurve.Row r : rows) {
            b.append(String.format(Locale.ROOT, "| %s | %.2f | %.2fx | %.6f | %.4f | %.4f |%n", r.scheme(),
                    r.effectiveBits(), r.compression(), r.meanKl(), r.perplexity(), r.top1Agreement()));
        }
        return b.toString();
    }

    static String json(List<KvCurve.Row> rows) {
        List<Map<String, Object>> out = new ArrayList<>();
        for (KvCurve.Row r : rows) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("scheme", r.scheme());
            m.put("effective_bits", r.effectiveBits());
            m.put("mean_kl", r.meanKl());
            m.put("perplexity", r.perplexity());
            m.put("top1_agreement", r.top1Agreement());
            out.add(m);
        }
        return JsonMapper.shared().writerWithDefaultPrettyPrinter().writeValueAsString(out) + "\n";
    }

    /** Family of a scheme for the plot's series: turbo by key bits, uniform, or other. */
    private static String family(String scheme) {
        if (scheme.startsWith("turbo:k")) {
            return "turbo, " + scheme.substring(6, 8) + " keys";
        }
        return scheme.startsWith("int") ? "uniform affine (group 64)" : scheme;
    }

    /** Mean KL against effective bits on a log scale; bf16 (KL 0) has no place on a log axis and is left out. */
    static void plot(List<KvCurve.Row> rows, Path png) throws IOException {
        System.setProperty("java.awt.headless", "true");
        Map<String, XYSeries> series = new LinkedHashMap<>();
        Map<String, String> labels = new LinkedHashMap<>();
        for (KvCurve.Row r : rows) {
            if (r.meanKl() <= 0) {
                continue;
            }
            XYSeries s = series.computeIfAbsent(family(r.scheme()), k -> new XYSeries(k, true, true));
            s.add(r.effectiveBits(), r.meanKl());
            labels.put(family(r.scheme()) + "@" + r.effectiveBits(), r.scheme());
        }
        XYSeriesCollection data = new XYSeriesCollection();
        series.values().forEach(data::addSeries);
        NumberAxis x = new NumberAxis("effective bits per KV element (incl. scales)");
        x.setAutoRangeIncludesZero(false);
        LogAxis y = new LogAxis("mean KL(bf16 ‖ scheme), nats (log scale)");
        y.setBase(10);
        y.setSmallestValue(1e-9);
        double lo = Double.MAX_VALUE;
        double hi = 0;
        for (KvCurve.Row r : rows) {
            if (r.meanKl() > 0) {
                lo = Math.min(lo, r.meanKl());
                hi = Math.max(hi, r.meanKl());
            }
        }
        if (hi > 0) { // whole decades around the data, a label per decade
            y.setRange(Math.pow(10, Math.floor(Math.log10(lo))), Math.pow(10, Math.ceil(Math.log10(hi * 1.0001))));
        }
        y.setTickUnit(new NumberTickUnit(1.0));
        y.setMinorTickCount(9);
        y.setMinorTickMarksVisible(true);
        y.setNumberFormatOverride(new DecimalFormat("0.#########", DecimalFormatSymbols.getInstance(Locale.ROOT)));
        XYLineAndShapeRenderer renderer = new XYLineAndShapeRenderer(true, true);
        renderer.setDefaultItemLabelGenerator((dataset, s, item) -> labels.get(
                dataset.getSeriesKey(s) + "@" + dataset.getXValue(s, item)));
        renderer.setDefaultItemLabelsVisible(true);
        renderer.setDefaultItemLabelFont(new Font(Font.SANS_SERIF, Font.PLAIN, 11));
        for (int i = 0; i < data.getSeriesCount(); i++) {
            renderer.setSeriesStroke(i, new BasicStroke(1.5f));
        }
        XYPlot plot = new XYPlot(data, x, y, renderer);
        plot.setBackgroundPaint(Color.WHITE);
        plot.setDomainGridlinePaint(Color.LIGHT_GRAY);
        plot.setRangeGridlinePaint(Color.LIGHT_GRAY);
        JFreeChart chart = new JFreeChart("KV cache quality vs size (teacher-forced decode KL against bf16)",
                new Font(Font.SANS_SERIF, Font.BOLD, 14), plot, true);
        chart.setBackgroundPaint(Color.WHITE);
        ChartUtils.saveChartAsPNG(png.toFile(), chart, 900, 560);
    }
}

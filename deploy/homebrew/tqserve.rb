# Homebrew formula for a tap (e.g. a repository named homebrew-tqserve holding Formula/tqserve.rb):
#   brew install <owner>/tqserve/tqserve && brew services start tqserve
# serves the embedded model on the GPU (MLX through mlx-c) on 127.0.0.1:8080, with the settings in
# $(brew --prefix)/etc/tqserve/application.yml and the logs in $(brew --prefix)/var/log/tqserve/.
class Tqserve < Formula
  # The repository the tap builds from: set it to yours.
  REPOSITORY = "https://github.com/tqserve/tqserve".freeze

  desc "OpenAI-compatible inference server with a TurboQuant KV cache and MLX on Apple silicon"
  homepage REPOSITORY
  head "#{REPOSITORY}.git", branch: "main"

  depends_on "maven" => :build
  depends_on arch: :arm64
  depends_on "mlx-c"
  depends_on :macos
  depends_on "openjdk"

  def install
    ENV["JAVA_HOME"] = Language::Java.java_home("25+")
    # The build makes target/tqserve.jar (Spring Boot's executable jar; pom.xml finalName "tqserve").
    system "mvn", "-B", "-q", "-DskipTests", "package"
    libexec.install "tqserve"
    (libexec/"target").install "target/tqserve.jar"
    libexec.install "models"
    (bin/"tqserve").write_env_script libexec/"tqserve", Language::Java.overridable_java_home_env("25+")
  end

  def post_install
    (var/"log/tqserve").mkpath
    config = etc/"tqserve/application.yml"
    return if config.exist?

    # A starter for this host, as `tqserve config init` writes it, serving the embedded model.
    system bin/"tqserve", "config", "init", "--out", config, "--model", opt_libexec/"models/tiny-llama-h128"
  end

  service do
    run [opt_bin/"tqserve", "serve", "--config", etc/"tqserve/application.yml", "--service"]
    environment_variables TQSERVE_LOG_DIR: var/"log/tqserve", MLXC_LIBRARY: Formula["mlx-c"].opt_lib
    keep_alive crashed: true
    process_type :interactive
    log_path var/"log/tqserve/stdout.log"
    error_log_path var/"log/tqserve/stderr.log"
  end

  def caveats
    <<~EOS
      Settings: #{etc}/tqserve/application.yml (check a change with `tqserve config check`).
      Logs: #{var}/log/tqserve/tqserve.log. Host check: `tqserve doctor`.
    EOS
  end

  test do
    assert_match "ok", shell_output("#{bin}/tqserve config check #{etc}/tqserve/application.yml")
  end
end

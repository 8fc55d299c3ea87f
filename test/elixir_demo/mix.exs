# A small Elixir application for test/e2e/elixir_test.sh: a supervised GenServer whose loop
# burns CPU in known functions, and the extrospect agent as a path dependency (a rebar3
# project: mix builds it with rebar3, given by MIX_REBAR3). XP_AGENT_PATH is the agent's source.
defmodule ElixirDemo.MixProject do
  use Mix.Project

  def project do
    [
      app: :elixir_demo,
      version: "0.1.0",
      elixir: "~> 1.14",
      deps: deps(),
      releases: [elixir_demo: [include_executables_for: [:unix]]]
    ]
  end

  def application do
    [mod: {ElixirDemo.Application, []}, extra_applications: [:logger]]
  end

  defp deps do
    [{:extrospect, path: System.fetch_env!("XP_AGENT_PATH")}]
  end
end

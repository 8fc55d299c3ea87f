defmodule ElixirDemo.Worker do
  @moduledoc """
  A GenServer that burns CPU: handle_info(:spin) calls loop/1, which folds a list. One instance
  is registered as ElixirDemo.Worker, one is not (named by its '$initial_call',
  ElixirDemo.Worker.init/1). When READY_FILE is set, the registered one writes it (os_pid=...)
  once the extrospect agent has calibrated.
  """
  use GenServer

  def start_link(opts), do: GenServer.start_link(__MODULE__, :ok, opts)

  @impl true
  def init(:ok) do
    send(self(), :spin)
    {:ok, 0}
  end

  @impl true
  def handle_info(:spin, n) do
    loop(2000)
    n = if n >= 0 and agent_ready?(), do: ready(), else: n
    send(self(), :spin)
    {:noreply, n}
  end

  # Not a tail call, so that loop/1 keeps its frame under handle_info/2.
  def loop(k) do
    # Not a tail call either: the fun keeps its frame while phash2 runs (a tail call into the BIF
    # would leave only its short body to sample, and a 2 s recording could miss it).
    sum = Enum.reduce(1..k, 0, fn x, acc -> :erlang.phash2({x, acc}) + 1 end)
    sum + 1
  end

  # The agent publishes after its first calibration: the sampler must not race it.
  defp agent_ready? do
    match?(%{runs: runs} when runs >= 1, :extrospect.status())
  catch
    _, _ -> false
  end

  # Once: -1 afterwards.
  defp ready do
    case {Process.info(self(), :registered_name), System.get_env("READY_FILE")} do
      {{:registered_name, __MODULE__}, file} when is_binary(file) ->
        File.write!(file <> ".tmp", "os_pid=#{System.pid()}\nagent=true\n")
        File.rename!(file <> ".tmp", file)

      _ ->
        :ok
    end

    -1
  end
end

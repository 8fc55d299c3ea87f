defmodule ElixirDemo.Application do
  @moduledoc false
  use Application

  @impl true
  def start(_type, _args) do
    children = [
      {ElixirDemo.Worker, name: ElixirDemo.Worker},
      Supervisor.child_spec({ElixirDemo.Worker, []}, id: :anonymous_worker)
    ]

    Supervisor.start_link(children, strategy: :one_for_one, name: ElixirDemo.Supervisor)
  end
end

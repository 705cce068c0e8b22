"""What LangGraph server loads besides the graphs: auth, the durable checkpointer."""

# Sourced by the scripts: nothing may reach a model hub or phone home.
export HF_HUB_OFFLINE=1
export TRANSFORMERS_OFFLINE=1
export HF_HUB_DISABLE_TELEMETRY=1
export ANONYMIZED_TELEMETRY=False
export LANGGRAPH_CLI_NO_ANALYTICS=1
export LANGGRAPH_NO_VERSION_CHECK=1
export LANGSMITH_TRACING=false
export TOKENIZERS_PARALLELISM=false

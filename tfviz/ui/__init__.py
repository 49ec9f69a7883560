"""The only tfviz package that imports streamlit: cached loaders, shared state and widgets."""

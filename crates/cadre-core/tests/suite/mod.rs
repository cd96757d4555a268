mod agent_loop;
mod common;
mod session_store;

pub mod mock_anthropic;
pub mod mock_openai;

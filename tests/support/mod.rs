pub mod mock_anthropic;
pub mod mock_chat_stream;
pub mod mock_gemini;
pub mod mock_judge;
pub mod mock_openai;
pub mod mock_responses;
pub mod mock_router;
pub mod serve;

pub mod mock_openai;

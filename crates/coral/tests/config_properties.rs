//! The config loader on arbitrary text never panics, and what it accepts is valid and
//! reloads from its own JSON (the fuzz target `config` checks the same at scale).

use coral::Config;
use proptest::prelude::*;

proptest! {
    #[test]
    fn arbitrary_text(text in ".{0,300}") {
        if let Ok((config, _)) = Config::from_json(&text) {
            prop_assert!(config.validate().is_empty());
        }
    }

    #[test]
    fn json_shaped_text(
        cap in any::<i64>(),
        ratio in any::<f64>(),
        mode in "[a-z]{0,8}",
        extra in "[a-z_]{1,10}",
    ) {
        let text = format!(
            r#"{{"memory": {{"capacity_threshold": {cap}, "{extra}": 1}}, "storage": {{"hard_ratio": {ratio}}}, "retrieval": {{"mode": "{mode}"}}}}"#
        );
        match Config::from_json(&text) {
            Ok((config, _)) => {
                prop_assert!(config.validate().is_empty());
                let (back, _) = Config::from_json(&config.to_json_pretty()).unwrap();
                prop_assert_eq!(back.memory, config.memory);
            }
            Err(message) => prop_assert!(!message.is_empty()),
        }
    }
}

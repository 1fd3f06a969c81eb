//! `Timeline::conversations`: a hard key's conversations with their counts and times, newest
//! first, and nothing of another hard key.

mod common;

use coral_timeline::{BeginTurn, CompleteTurn, EntryInput, Namespace, Timeline};

use common::{T0, temp_timeline};

fn turn(t: &Timeline, ns: &Namespace, text: &str, at: f64) {
    let turn = t
        .begin_turn(
            ns,
            &BeginTurn {
                stimuli: vec![EntryInput::user(text.to_string())],
                ..BeginTurn::default()
            },
            at,
        )
        .unwrap();
    t.complete_turn(
        ns,
        &turn.turn_id,
        &CompleteTurn::answer(format!("{text} answered")),
        at + 1.0,
    )
    .unwrap();
}

#[test]
fn each_conversation_of_the_hard_key_with_its_counts_newest_first() {
    let (t, _dir) = temp_timeline();
    let alice = Namespace::new("alice", "morning");
    turn(&t, &alice, "first", T0);
    turn(&t, &alice, "second", T0 + 60.0);
    let evening = alice.conversation("evening");
    turn(&t, &evening, "later", T0 + 3_600.0);
    // An open turn counts as open.
    t.begin_turn(
        &evening,
        &BeginTurn {
            stimuli: vec![EntryInput::user("still going".to_string())],
            ..BeginTurn::default()
        },
        T0 + 3_700.0,
    )
    .unwrap();
    // Another user and another tenant with the same conversation ids.
    turn(
        &t,
        &Namespace::new("bob", "morning"),
        "SECRET",
        T0 + 9_000.0,
    );
    turn(
        &t,
        &Namespace::new("alice", "hidden").tenant("acme"),
        "SECRET",
        T0 + 9_000.0,
    );

    let list = t.conversations(&alice).unwrap();
    let ids: Vec<&str> = list.iter().map(|c| c.conversation_id.as_str()).collect();
    assert_eq!(
        ids,
        ["evening", "morning"],
        "newest first, this hard key only"
    );
    let (evening, morning) = (&list[0], &list[1]);
    assert_eq!(
        (morning.entries, morning.completed_turns, morning.open_turns),
        (4, 2, 0)
    );
    assert_eq!(morning.first_at, Some(T0));
    assert_eq!(
        (evening.entries, evening.completed_turns, evening.open_turns),
        (3, 1, 1)
    );
    assert_eq!(evening.last_at, Some(T0 + 3_700.0));
    assert_eq!((morning.episodic, morning.compactions), (0, 0));
    assert!(!serde_json::to_string(&list).unwrap().contains("SECRET"));
    // The namespace is checked like every read's.
    assert!(t.conversations(&Namespace::new("", "x")).is_err());
}

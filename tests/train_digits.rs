//! The train step of `examples/train_digits.rs` (an MLP on the UCI digits, Adam via `gradients` and `apply_adam`, run in a `Session`): a few hundred steps bring the loss down, and a step equals its eager twin bit for bit.

#[path = "../examples/digits/mod.rs"]
mod digits;

use digits::{batches, mlp, Digits, Mlp, Trainer};

#[test]
fn the_digits_data_file_is_the_whole_set() {
    let all = Digits::load().expect("digits.csv.gz decodes");
    assert_eq!(all.images.shape(), &[1797, 64]);
    for class in 0..10 {
        let count = all.labels.iter().filter(|&&l| l == class).count();
        assert!((174..=183).contains(&count), "{count} images of {class}");
    }
    assert!(all.images.iter().all(|&p| (0.0..=1.0).contains(&p)));
    // The first image is a 0, as in scikit-learn's load_digits().
    assert_eq!(all.labels[0], 0);
    assert_eq!(all.images[[0, 2]], 5.0 / 16.0);
    let (train, held_out) = all.split(&mut digits::rng(1));
    assert_eq!((train.len(), held_out.len()), (1438, 359));
    let (train2, _) = all.split(&mut digits::rng(1));
    assert_eq!(train.labels, train2.labels, "the split is seeded");
}

#[test]
fn a_few_hundred_adam_steps_bring_the_loss_down() {
    let all = Digits::load().expect("digits.csv.gz decodes");
    let (train, held_out) = all.split(&mut digits::rng(3));
    let mut rng = digits::rng(4);
    let mut trainer = Trainer::new(Mlp::init(&mut rng), 2e-3);
    let (loss_before, _) = trainer.evaluate(&held_out).expect("evaluate runs");
    let mut losses = Vec::new();
    while losses.len() < 300 {
        for batch in batches(&train, 32, &mut rng) {
            let (loss, accuracy) = trainer.step(&batch).expect("train step runs");
            assert!(loss.is_finite() && (0.0..=1.0).contains(&accuracy));
            losses.push(loss);
        }
    }
    let mean = |s: &[f32]| s.iter().sum::<f32>() / s.len() as f32;
    let (first, last) = (mean(&losses[..20]), mean(&losses[losses.len() - 20..]));
    assert!(
        last < 0.5 * first,
        "training loss {first} over the first 20 steps, {last} over the last 20"
    );
    let (loss_after, accuracy) = trainer.evaluate(&held_out).expect("evaluate runs");
    assert!(
        loss_after < 0.5 * loss_before,
        "held-out loss {loss_before} before, {loss_after} after {} steps",
        trainer.steps
    );
    // Far from the example's 95% after a third of its steps, but far above chance (10%).
    assert!(accuracy > 0.8, "held-out accuracy {accuracy}");
}

#[test]
fn a_train_step_equals_its_eager_twin_bit_for_bit() {
    let all = Digits::load().expect("digits.csv.gz decodes");
    let mut rng = digits::rng(5);
    let p = Mlp::init(&mut rng);
    let z = Mlp::zeros();
    let batch = all.select(&(0..37).collect::<Vec<_>>());
    macro_rules! step {
        ($f:expr) => {
            $f(
                &batch.images,
                &batch.labels,
                &p.w1,
                &p.b1,
                &p.w2,
                &p.b2,
                &z.w1,
                &z.b1,
                &z.w2,
                &z.b2,
                &z.w1,
                &z.b1,
                &z.w2,
                &z.b2,
                1.0,
                2e-3,
            )
            .expect("train step runs")
        };
    }
    let compiled = step!(mlp::train_step);
    let eager = step!(mlp::train_step::eager);
    assert_eq!(compiled, eager);
    let mut trainer = Trainer::new(p.clone(), 2e-3);
    trainer.step(&batch).expect("train step runs");
    assert_eq!(trainer.params.w1, compiled.2 .0);
    assert_ne!(trainer.params.w1, p.w1);
}

//! The train steps of `examples/train_digits.rs` (an MLP and a CNN on the UCI digits, Adam via `gradients` and `apply_adam`, run in a `Session`): a few hundred steps bring the loss down, and a step equals its eager twin bit for bit.

#[path = "../examples/digits/mod.rs"]
mod digits;

use digits::{batches, cnn, mlp, Cnn, CnnTrainer, Digits, Mlp, MlpTrainer, Trainer};

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

/// Trains `trainer` for at least `steps` steps of batches of 32 and checks that the training
/// loss over the last 20 steps is under half that over the first 20, and that the held-out
/// loss halved too.
fn loss_goes_down(trainer: &mut dyn Trainer, steps: usize, seed: u64) -> f32 {
    let all = Digits::load().expect("digits.csv.gz decodes");
    let (train, held_out) = all.split(&mut digits::rng(3));
    let mut rng = digits::rng(seed);
    let (loss_before, _) = trainer.evaluate(&held_out).expect("evaluate runs");
    let mut losses = Vec::new();
    while losses.len() < steps {
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
        trainer.steps()
    );
    accuracy
}

#[test]
fn a_few_hundred_adam_steps_bring_the_mlps_loss_down() {
    let mut trainer = MlpTrainer::new(Mlp::init(&mut digits::rng(4)), 2e-3);
    let accuracy = loss_goes_down(&mut trainer, 300, 4);
    // Far from the example's 95% after a third of its steps, but far above chance (10%).
    assert!(accuracy > 0.8, "held-out accuracy {accuracy}");
}

#[test]
fn an_epoch_of_adam_steps_brings_the_cnns_loss_down() {
    // One epoch (45 steps): a CNN step in a debug build takes about 80 ms, mostly in the
    // unoptimised convolution kernels.
    let mut trainer = CnnTrainer::new(Cnn::init(&mut digits::rng(4)), 2e-3);
    let accuracy = loss_goes_down(&mut trainer, 45, 4);
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
    let mut trainer = MlpTrainer::new(p.clone(), 2e-3);
    trainer.step(&batch).expect("train step runs");
    assert_eq!(trainer.params.w1, compiled.2 .0);
    assert_ne!(trainer.params.w1, p.w1);
}

#[test]
fn a_cnn_train_step_equals_its_eager_twin_bit_for_bit() {
    let all = Digits::load().expect("digits.csv.gz decodes");
    let p = Cnn::init(&mut digits::rng(6));
    let z = Cnn::zeros();
    let batch = all.select(&(100..133).collect::<Vec<_>>());
    macro_rules! step {
        ($f:expr) => {
            $f(
                &batch.images,
                &batch.labels,
                &p.k,
                &p.c,
                &p.w,
                &p.b,
                &z.k,
                &z.c,
                &z.w,
                &z.b,
                &z.k,
                &z.c,
                &z.w,
                &z.b,
                1.0,
                2e-3,
            )
            .expect("train step runs")
        };
    }
    let compiled = step!(cnn::train_step);
    let eager = step!(cnn::train_step::eager);
    assert_eq!(compiled, eager);
    let mut trainer = CnnTrainer::new(p.clone(), 2e-3);
    trainer.step(&batch).expect("train step runs");
    assert_eq!(trainer.params.k, compiled.2 .0);
    assert_ne!(trainer.params.k, p.k);
}

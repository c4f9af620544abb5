//! Training: an MLP and a small CNN learn the UCI handwritten digits with Adam, each whole train step (forward, `gradients`, `apply_adam`) one `#[graph]` function run in a `Session`.
//!
//! `cargo run --release --example train_digits [-- OUT_DIR]`
//!
//! The data are the 1,797 8x8 images scikit-learn ships (`examples/data/`, with their
//! citation and license), shuffled with a fixed seed; a fifth is held out and never trained
//! on. Two models (`examples/digits/mod.rs`) are trained in turn, each for 30 epochs of
//! mini-batches of 32:
//!
//! - an MLP 64 -> 128 (relu) -> 10;
//! - a CNN on the images as 8x8x1: a 3x3 convolution to 32 channels with relu, a 2x2 max
//!   pooling, and a dense layer from the 4x4x32 features to the 10 classes.
//!
//! Each train step computes the mean sparse softmax cross-entropy of a batch (a symbolic batch
//! dim, so the smaller last batch of an epoch runs the same compiled step), the gradients of
//! the loss with respect to the four parameters (through the convolution and the pooling for
//! the CNN), and one Adam update of each; it returns the new parameters and Adam's new `m` and
//! `v`, which the loop passes to the next step.
//!
//! A progress bar shows the step, the batch's loss and accuracy, and the held-out accuracy,
//! measured after each epoch. The curves go to `OUT_DIR` (default `target/train_digits/`):
//! TensorBoard scalars (`train/loss`, `train/accuracy`, `held_out/loss`, `held_out/accuracy`)
//! and the train step's graph in `OUT_DIR/logs/mlp/` and `OUT_DIR/logs/cnn/` (`tensorboard
//! --logdir OUT_DIR/logs`), and an SVG plot of both models' loss and accuracy curves,
//! `OUT_DIR/train_digits.svg`. The program exits with an error when either model's held-out
//! accuracy is below 95%.

#[path = "digits/mod.rs"]
mod digits;

use digits::{batches, Cnn, CnnTrainer, Digits, Mlp, MlpTrainer, Trainer};
use grafo::EventWriter;
use indicatif::{ProgressBar, ProgressStyle};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Seeds of the shuffle that holds out the test fifth, and of the initial weights and batches.
const SPLIT_SEED: u64 = 1998;
const TRAIN_SEED: u64 = 7;
const EPOCHS: usize = 30;
const BATCH: usize = 32;
const LEARNING_RATE: f32 = 2e-3;
/// The held-out accuracy each model must reach.
const TARGET: f32 = 0.95;

/// One point of a curve: the step and the value.
type Curve = Vec<(u32, f32)>;

/// Picks a run's per-step and per-epoch curves of one quantity.
type Pick = fn(&Run) -> [&Curve; 2];

/// What training one model gave.
struct Run {
    name: &'static str,
    train_loss: Curve,
    train_accuracy: Curve,
    test_loss: Curve,
    test_accuracy: Curve,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out_dir = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/train_digits"));
    // Printed relative to the current directory when under it.
    let out_dir = std::env::current_dir()
        .ok()
        .and_then(|cwd| out_dir.strip_prefix(cwd).ok().map(Path::to_path_buf))
        .unwrap_or(out_dir);
    let all = Digits::load()?;
    let (train, held_out) = all.split(&mut digits::rng(SPLIT_SEED));
    println!(
        "UCI digits: {} images of 8x8, {} to train on, {} held out; Adam (lr {LEARNING_RATE}), \
         batches of {BATCH}, {EPOCHS} epochs",
        all.len(),
        train.len(),
        held_out.len(),
    );

    let mut rng = digits::rng(TRAIN_SEED);
    let mut mlp = MlpTrainer::new(Mlp::init(&mut rng), LEARNING_RATE);
    let mlp_run = train_model(
        "mlp",
        &format!("MLP 64-{}-10", digits::HIDDEN),
        &mut mlp,
        &train,
        &held_out,
        &mut rng,
        &out_dir,
    )?;
    let mut rng = digits::rng(TRAIN_SEED);
    let mut cnn = CnnTrainer::new(Cnn::init(&mut rng), LEARNING_RATE);
    let cnn_run = train_model(
        "cnn",
        &format!("CNN conv3x3x{}-maxpool2-dense", digits::FILTERS),
        &mut cnn,
        &train,
        &held_out,
        &mut rng,
        &out_dir,
    )?;

    let svg = out_dir.join("train_digits.svg");
    std::fs::write(&svg, plot(&[&mlp_run, &cnn_run]))?;
    println!(
        "curves: {} and TensorBoard scalars in {}",
        svg.display(),
        out_dir.join("logs").display()
    );

    let mut failed = false;
    for run in [&mlp_run, &cnn_run] {
        let accuracy = run.test_accuracy.last().map_or(0.0, |p| p.1);
        if accuracy < TARGET {
            eprintln!(
                "error: the {}'s held-out accuracy {:.2}% is below {:.0}%",
                run.name,
                accuracy * 100.0,
                TARGET * 100.0
            );
            failed = true;
        }
    }
    if failed {
        std::process::exit(1);
    }
    Ok(())
}

/// Trains one model for [`EPOCHS`] epochs, evaluating it on `held_out` after each, with a
/// progress bar; writes its TensorBoard scalars and graph to `OUT_DIR/logs/<name>/` and prints
/// what it reached.
fn train_model(
    name: &'static str,
    description: &str,
    trainer: &mut dyn Trainer,
    train: &Digits,
    held_out: &Digits,
    rng: &mut rand_xorshift::XorShiftRng,
    out_dir: &Path,
) -> Result<Run, Box<dyn std::error::Error>> {
    // A run starts in an empty log directory, or TensorBoard would draw the last run's points
    // with this one's.
    let logdir = out_dir.join("logs").join(name);
    if logdir.exists() {
        std::fs::remove_dir_all(&logdir)?;
    }
    let mut events = EventWriter::new(&logdir)?;
    trainer.train_step_graph().write_tensorboard(&logdir)?;

    let steps_per_epoch = train.len().div_ceil(BATCH);
    let bar = ProgressBar::new((EPOCHS * steps_per_epoch) as u64);
    bar.set_style(ProgressStyle::with_template(
        "{prefix} {elapsed_precise} [{bar:30}] step {pos}/{len}  {msg}",
    )?);
    bar.set_prefix(name);
    let mut run = Run {
        name,
        train_loss: Curve::new(),
        train_accuracy: Curve::new(),
        test_loss: Curve::new(),
        test_accuracy: Curve::new(),
    };
    let (initial_loss, initial_accuracy) = trainer.evaluate(held_out)?;
    run.test_loss.push((0, initial_loss));
    run.test_accuracy.push((0, initial_accuracy));
    events.add_scalar("held_out/loss", 0, initial_loss)?;
    events.add_scalar("held_out/accuracy", 0, initial_accuracy)?;
    let mut held_out_text = format!("{:.1}%", initial_accuracy * 100.0);

    println!("{name}: {description}");
    let start = Instant::now();
    for epoch in 1..=EPOCHS {
        for batch in batches(train, BATCH, rng) {
            let (loss, accuracy) = trainer.step(&batch)?;
            let step = trainer.steps();
            run.train_loss.push((step, loss));
            run.train_accuracy.push((step, accuracy));
            events.add_scalar("train/loss", step.into(), loss)?;
            events.add_scalar("train/accuracy", step.into(), accuracy)?;
            bar.set_message(format!(
                "loss {loss:.4}  batch accuracy {:5.1}%  held-out {held_out_text}",
                accuracy * 100.0
            ));
            bar.inc(1);
        }
        let (loss, accuracy) = trainer.evaluate(held_out)?;
        let step = trainer.steps();
        run.test_loss.push((step, loss));
        run.test_accuracy.push((step, accuracy));
        events.add_scalar("held_out/loss", step.into(), loss)?;
        events.add_scalar("held_out/accuracy", step.into(), accuracy)?;
        events.flush()?;
        held_out_text = format!("{:.1}%", accuracy * 100.0);
        if epoch % 10 == 0 {
            bar.suspend(|| {
                println!(
                    "{name}: epoch {epoch:2}, step {step:4}: held-out loss {loss:.4}, \
                     accuracy {:.1}%",
                    accuracy * 100.0
                );
            });
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    bar.finish_and_clear();
    let (loss, accuracy) = run
        .test_loss
        .last()
        .zip(run.test_accuracy.last())
        .map_or((f32::NAN, 0.0), |(l, a)| (l.1, a.1));
    let steps = trainer.steps();
    println!(
        "{name}: trained {steps} steps in {seconds:.2} s ({:.0} µs a step, evaluations \
         included); held-out accuracy {:.2}% ({}/{} images), loss {loss:.4}",
        seconds * 1e6 / f64::from(steps),
        accuracy * 100.0,
        (accuracy * held_out.len() as f32).round(),
        held_out.len()
    );
    Ok(run)
}

/// The loss and accuracy curves as an SVG document: two panels side by side, each model's
/// training batches per step (thin, light) and its held-out values per epoch (thick).
fn plot(runs: &[&Run]) -> String {
    const COLORS: [(&str, &str); 2] = [("#9ecae1", "#08519c"), ("#fdae6b", "#d94801")];
    let (width, height) = (960.0, 420.0);
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let values = |pick: Pick| -> Vec<f32> {
        runs.iter()
            .flat_map(|r| pick(r).into_iter().flatten().map(|p| p.1))
            .filter(|v| v.is_finite())
            .collect()
    };
    let losses = values(|r| [&r.train_loss, &r.test_loss]);
    let accuracies = values(|r| [&r.train_accuracy, &r.test_accuracy]);
    let max_loss = losses.iter().copied().fold(0.0f32, f32::max);
    let min_acc = accuracies.iter().copied().fold(1.0f32, f32::min);
    let last_step = runs
        .iter()
        .filter_map(|r| r.train_loss.last())
        .map(|p| p.0)
        .max()
        .unwrap_or(1)
        .max(1);
    let panels: [(&str, Pick, f32, f32); 2] = [
        (
            "cross-entropy loss",
            |r| [&r.train_loss, &r.test_loss],
            0.0,
            nice_ceil(max_loss),
        ),
        (
            "accuracy",
            |r| [&r.train_accuracy, &r.test_accuracy],
            // Zoomed on the last stretch, where the models differ; lower values sit on the axis.
            ((min_acc * 10.0).floor() / 10.0).max(0.8),
            1.0,
        ),
    ];
    for (i, (title, pick, lo, hi)) in panels.into_iter().enumerate() {
        let frame = Frame {
            left: 60.0 + i as f64 * width / 2.0,
            top: 40.0,
            width: width / 2.0 - 90.0,
            height: height - 130.0,
            x_max: f64::from(last_step),
            y_min: f64::from(lo),
            y_max: f64::from(hi),
        };
        frame.axes(&mut svg, title);
        // The thin per-step curves first, so that the held-out ones are drawn over them.
        for (run, (light, _)) in runs.iter().zip(COLORS) {
            frame.polyline(&mut svg, pick(run)[0], light, 1.0);
        }
        for (run, (_, dark)) in runs.iter().zip(COLORS) {
            frame.polyline(&mut svg, pick(run)[1], dark, 2.5);
        }
    }
    // The legend, under the panels: one row per model.
    for (j, (run, (light, dark))) in runs.iter().zip(COLORS).enumerate() {
        let y = height - 40.0 + j as f64 * 20.0;
        let name = run.name.to_uppercase();
        for (k, (label, color, stroke)) in [
            (format!("{name}, training batch (each step)"), light, 1.0),
            (format!("{name}, held-out fifth (each epoch)"), dark, 2.5),
        ]
        .into_iter()
        .enumerate()
        {
            let x = 60.0 + k as f64 * 320.0;
            let _ = writeln!(
                svg,
                r#"<line x1="{x}" y1="{y}" x2="{}" y2="{y}" stroke="{color}" stroke-width="{stroke}"/><text x="{}" y="{}">{label}</text>"#,
                x + 30.0,
                x + 38.0,
                y + 4.0
            );
        }
    }
    svg.push_str("</svg>\n");
    svg
}

/// A plot area and the ranges it maps.
struct Frame {
    left: f64,
    top: f64,
    width: f64,
    height: f64,
    x_max: f64,
    y_min: f64,
    y_max: f64,
}

impl Frame {
    fn x(&self, step: f64) -> f64 {
        self.left + step / self.x_max * self.width
    }

    fn y(&self, value: f64) -> f64 {
        let t = (value.clamp(self.y_min, self.y_max) - self.y_min) / (self.y_max - self.y_min);
        self.top + (1.0 - t) * self.height
    }

    /// The frame, a title, and ticks with grid lines on each axis (five on the y axis, round
    /// step counts on the x axis).
    fn axes(&self, svg: &mut String, title: &str) {
        let (l, t, w, h) = (self.left, self.top, self.width, self.height);
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="middle" font-size="14">{title}</text>"#,
            l + w / 2.0,
            t - 14.0
        );
        for k in 0..=5 {
            let value = self.y_min + f64::from(k) / 5.0 * (self.y_max - self.y_min);
            let y = self.y(value);
            let _ = writeln!(
                svg,
                r##"<line x1="{l}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#e5e5e5"/><text x="{}" y="{:.1}" text-anchor="end">{value:.2}</text>"##,
                l + w,
                l - 6.0,
                y + 4.0
            );
        }
        let every = f64::from(nice_ceil((self.x_max / 5.0) as f32));
        for k in 0..=(self.x_max / every) as u32 {
            let step = f64::from(k) * every;
            let x = self.x(step);
            let _ = writeln!(
                svg,
                r##"<line x1="{x:.1}" y1="{t}" x2="{x:.1}" y2="{}" stroke="#e5e5e5"/><text x="{x:.1}" y="{}" text-anchor="middle">{step}</text>"##,
                t + h,
                t + h + 16.0
            );
        }
        let _ = writeln!(
            svg,
            r#"<rect x="{l}" y="{t}" width="{w}" height="{h}" fill="none" stroke="black"/><text x="{}" y="{}" text-anchor="middle">step</text>"#,
            l + w / 2.0,
            t + h + 32.0
        );
    }

    fn polyline(&self, svg: &mut String, curve: &Curve, color: &str, stroke: f64) {
        let mut points = String::new();
        for &(step, value) in curve.iter().filter(|p| p.1.is_finite()) {
            let _ = write!(
                points,
                "{:.1},{:.1} ",
                self.x(f64::from(step)),
                self.y(f64::from(value))
            );
        }
        let _ = writeln!(
            svg,
            r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="{stroke}" stroke-linejoin="round"/>"#,
            points.trim_end()
        );
    }
}

/// A round number at least `v`, for an axis' bound or tick spacing: 1, 1.5, 2, 2.5, 3, 4, 5
/// or 8 times a power of ten.
fn nice_ceil(v: f32) -> f32 {
    if v <= 0.0 {
        return 1.0;
    }
    let scale = 10f32.powf(v.log10().floor());
    [1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 8.0, 10.0]
        .into_iter()
        .map(|m| m * scale)
        .find(|&b| b >= v)
        .unwrap_or(10.0 * scale)
}

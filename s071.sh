elif
